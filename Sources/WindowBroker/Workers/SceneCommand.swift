import Foundation
import IPCWire

/// What a session's driver tells its scene process in the lifecycle, in the broker's own terms.
/// `wire` is the one place it becomes a `WorkerCommand` as the SDK reads it (docs/PROTOCOL.md),
/// as `DomainToWire` is at the control edge.
enum SceneCommand {
    /// willConnect, with everything the scene starts from and the transitions that follow it.
    case connect(Connect)
    /// One of the four transitions, with those the scene runs in the same turn.
    case transition(Transition)
    case restoreInteractionState(UserActivity)
    /// A fresh restoration activity, with a picture of the window when it has one.
    case restorationActivity
    /// didDisconnect (and didDiscardSceneSessions when discarded); then the process exits.
    case disconnect(reason: DisconnectReason, discarded: Bool)

    struct Transition {
        /// willEnterForeground, didBecomeActive, willResignActive or didEnterBackground.
        var step: LifecycleStep
        /// Presented prominently (over its app's other scenes) from this transition on.
        var prominent: Bool
        /// With a prominent scene's willEnterForeground: the window it is a transient child of.
        var parentWindowHandle: String?
        /// Run right after this one, in the same turn (their own `then` stays empty).
        var then: [Transition] = []
    }

    struct Connect {
        var session: SessionStatus
        /// The session's first launch (a reconnecting scene restores instead).
        var isNew: Bool
        var delegateName: String
        /// Sessions of the app discarded while none of its scenes ran.
        var discardedSessions: [SessionID]
        var activities: [UserActivity]
        var restoration: UserActivity?
        var availableConfigurations: [String]
        var defaults: [String: PlistValue]
        var storage: [String: PlistValue]
        /// The scene's place in its app's one order of updates.
        var updateSequence: UInt64
        var then: [Transition]
        /// The picture the window shows until the scene is restored.
        var placeholderPNG: Data?
    }

    var wire: Windowbroker_V1_WorkerCommand.OneOf_Kind {
        switch self {
        case .connect(let connect):
            .connect(.with {
                $0.session = connect.session.wire(includeRestoration: false)
                $0.newSession = connect.isNew
                $0.delegateName = connect.delegateName
                $0.discardedSessionIds = connect.discardedSessions.map(\.description)
                $0.userActivities = connect.activities.map(\.wire)
                if let restoration = connect.restoration { $0.restorationActivity = restoration.wire }
                $0.availableConfigurations = connect.availableConfigurations
                $0.defaults = PlistValue.wire(dictionary: connect.defaults)
                $0.storage = PlistValue.wire(dictionary: connect.storage)
                $0.updateSequence = connect.updateSequence
                $0.then = connect.then.map(\.wire)
                if let placeholder = connect.placeholderPNG { $0.placeholderPng = placeholder }
            })
        case .transition(let transition):
            .transition(transition.wire)
        case .restoreInteractionState(let activity):
            .restoreInteractionState(.with { $0.activity = activity.wire })
        case .restorationActivity:
            .restorationActivityRequest(.init())
        case .disconnect(let reason, let discarded):
            .disconnect(.with {
                $0.reason = reason.description
                $0.discarded = discarded
            })
        }
    }
}

extension SceneCommand.Transition {
    var wire: Windowbroker_V1_LifecycleTransition {
        .with {
            $0.transition = switch step {
            case .willEnterForeground: .willEnterForeground
            case .didBecomeActive: .didBecomeActive
            case .willResignActive: .willResignActive
            default: .didEnterBackground
            }
            $0.prominent = prominent
            if let parentWindowHandle { $0.parentWindowHandle = parentWindowHandle }
            $0.then = then.map(\.wire)
        }
    }
}
