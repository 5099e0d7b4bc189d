import IPCWire

/// The app-level delegate (`UIApplicationDelegate`'s scene part). In windowbroker every scene
/// is its own process, so "the app" here is this process: it launches once, gets the discards
/// of sessions closed while none of its processes ran, and makes the scene's delegate.
@MainActor
public protocol AppDelegate: CommandResponder {
    /// The process has started (app-level launch). Called first, once.
    func didFinishLaunching()
    /// Which configuration a new session should use; nil keeps the broker's choice. Asked
    /// once, when the session first connects: a reconnecting scene keeps its configuration.
    func configurationName(forConnecting session: SceneSessionInfo, options: ConnectionOptions) -> String?
    /// Sessions the user discarded: delete data tied to them (drafts, caches).
    func didDiscardSceneSessions(_ sessionIDs: [SessionID])
    /// The delegate for the scene this process hosts.
    func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate
    /// The app's own additions to the main menu, built once per process after
    /// `didFinishLaunching` and sent before the first scene's willConnect returns (a prewarmed
    /// process sends them before it is bound to a session). A refused change is printed to
    /// stderr; `Scene.changeMenu` throws instead.
    func buildMenu(with builder: inout MenuBuilder)
}

extension AppDelegate {
    /// Does nothing.
    public func didFinishLaunching() {}
    /// Keeps the broker's choice.
    public func configurationName(forConnecting session: SceneSessionInfo, options: ConnectionOptions) -> String? { nil }
    /// Does nothing.
    public func didDiscardSceneSessions(_ sessionIDs: [SessionID]) {}
    /// Adds nothing.
    public func buildMenu(with builder: inout MenuBuilder) {}
}

/// The scene delegate (`UIWindowSceneDelegate`). Calls arrive in the order docs/LIFECYCLE.md
/// fixes; each returns before the broker moves on.
@MainActor
public protocol SceneDelegate: CommandResponder {
    /// The scene connects to its session. `options.userActivities` carry the activation's
    /// activities; `scene.session.restorationActivity` is what the scene handed over last time.
    func willConnect(to scene: Scene, options: ConnectionOptions)
    /// The system is taking the process away (reclaim, discard). Free resources; keep user data.
    func didDisconnect(_ scene: Scene)
    /// The scene is about to be seen: undo what `didEnterBackground` did.
    func willEnterForeground(_ scene: Scene)
    /// The scene is visible and receives events (foregroundActive). Every visible scene is
    /// active, several at once (side by side); keyboard focus is ``didBecomeKey(_:)``.
    func didBecomeActive(_ scene: Scene)
    /// The scene stops receiving events (going to the background, or dimmed behind a
    /// prominent scene of its app): pause what needs the user's attention.
    func willResignActive(_ scene: Scene)
    /// The scene is no longer seen. Save user data; the broker asks for the restoration activity next.
    func didEnterBackground(_ scene: Scene)
    /// The activity that brings this scene back as it is now; asked when it goes to the background.
    func stateRestorationActivity(for scene: Scene) -> UserActivity?
    /// After `willConnect`, before the first foreground: put interaction state (cursor, scroll)
    /// back. Call `restoration.extend()` to finish asynchronously, then `restoration.complete()`.
    func restoreInteractionState(_ scene: Scene, with activity: UserActivity, restoration: RestorationRequest)
    /// An activity for a scene that is already connected.
    func `continue`(_ scene: Scene, activity: UserActivity)
    /// An action sent to this scene (a command, `wmctl send`). It may await requests of its
    /// own (open a window, close a scene); lifecycle callbacks still arrive meanwhile.
    func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome
    /// `requestSceneSessionRefresh` reached this scene: bring `title` and `userActivity` up to
    /// date with the model; the broker takes both for the switcher entry.
    func refresh(_ scene: Scene)
    /// The broker refused something the scene published (`title`, `userActivity`, activation
    /// conditions): e.g. an activity type the app does not declare. It keeps the last good one.
    func updateRefused(_ scene: Scene, error: BrokerError)
    /// Memory is short and this scene is in the background: drop caches, keep user data.
    /// Return how many bytes were freed (reported to the broker).
    func didReceiveMemoryWarning(_ scene: Scene, level: MemoryWarningLevel) -> Int
    /// An update event posted by a scene of this app (this one included) or from outside, in
    /// the app's order (`update.sequence` only grows). Update the UI from it.
    func didReceive(_ scene: Scene, update: UpdateEvent)
    /// This scene fell behind: its queue at the broker overflowed and updates `from...to`
    /// were dropped. `scene.defaults` is already current; reload the rest from the model.
    func updatesDropped(_ scene: Scene, from: UInt64, to: UInt64)
    /// A shared default changed (by any scene of the app, this one included, or by wmctl).
    func defaultsDidChange(_ scene: Scene, key: String, value: PlistValue?)

    // MARK: The window (when the process has a display: `scene.window`)

    /// The compositor gave the window a new size (a resize, tiling).
    func sizeDidChange(_ scene: Scene, to size: WindowSize)
    /// The scene became the key scene: it has the keyboard focus, key commands come to it.
    /// With a window, the compositor decides (the user clicked it); headless, the broker does
    /// (the scene last brought forward). At most one scene at a time is key.
    func didBecomeKey(_ scene: Scene)
    /// The scene stopped being the key scene.
    func didResignKey(_ scene: Scene)
}

/// How short memory is when a background scene is warned.
public enum MemoryWarningLevel: String, Sendable {
    /// Memory is getting short: drop caches that are cheap to rebuild.
    case warning
    /// Reclaims are next: drop everything that can be rebuilt.
    case critical
}

extension SceneDelegate {
    /// Does nothing (GTK lays the window out again).
    public func sizeDidChange(_ scene: Scene, to size: WindowSize) {}
    /// Does nothing.
    public func didBecomeKey(_ scene: Scene) {}
    /// Does nothing.
    public func didResignKey(_ scene: Scene) {}
    /// Does nothing.
    public func didDisconnect(_ scene: Scene) {}
    /// Does nothing.
    public func willEnterForeground(_ scene: Scene) {}
    /// Does nothing.
    public func didBecomeActive(_ scene: Scene) {}
    /// Does nothing.
    public func willResignActive(_ scene: Scene) {}
    /// Does nothing.
    public func didEnterBackground(_ scene: Scene) {}
    /// The scene's current ``Scene/userActivity``.
    public func stateRestorationActivity(for scene: Scene) -> UserActivity? { scene.userActivity }
    /// Does nothing: the restore is complete at once.
    public func restoreInteractionState(_ scene: Scene, with activity: UserActivity, restoration: RestorationRequest) {}
    /// Ignores the activity.
    public func `continue`(_ scene: Scene, activity: UserActivity) {}
    /// Declines every action.
    public func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome { .declined("this scene performs no actions") }
    /// Leaves title and activity as they are.
    public func refresh(_ scene: Scene) {}
    /// Ignores the refusal.
    public func updateRefused(_ scene: Scene, error: BrokerError) {}
    /// Frees nothing.
    public func didReceiveMemoryWarning(_ scene: Scene, level: MemoryWarningLevel) -> Int { 0 }
    /// Ignores the event (``Scene/updates`` still yields it).
    public func didReceive(_ scene: Scene, update: UpdateEvent) {}
    /// Does nothing.
    public func updatesDropped(_ scene: Scene, from: UInt64, to: UInt64) {}
    /// Does nothing (``SharedDefaults/changes(for:)`` still yields it).
    public func defaultsDidChange(_ scene: Scene, key: String, value: PlistValue?) {}
}

/// What the session looks like from inside the scene.
public struct SceneSessionInfo: Sendable, Equatable {
    /// The session's id, the same across reclaims and broker restarts.
    public var id: SessionID
    /// The app's id from its manifest.
    public var appID: AppID
    /// The scene configuration the session uses (from the manifest's `configurations`).
    public var configuration: String
    /// The configuration's role, e.g. `windowApplication`.
    public var role: String
    /// The title the switcher showed when the scene connected.
    public var title: String
    /// What the scene handed over last time (nil for a new session).
    public var restorationActivity: UserActivity?
    /// The configuration's `delegate` from the manifest, to pick a delegate type by name.
    public var delegateName: String = ""
    /// The session's first connection (its configuration is chosen now, and only now).
    public var isNew: Bool = false
}

/// What came with the activation that connected the scene.
public struct ConnectionOptions: Sendable {
    /// The activities the activation carried (`wmctl open --activity`, a scene's request, a search hit).
    public var userActivities: [UserActivity]
}

/// An action for a scene: `wmctl send SESSION NAME --arg K=V`, or a control client's `send`.
public struct SceneAction: Sendable {
    /// The action's name; the app decides which it knows.
    public var name: String
    /// The action's arguments.
    public var arguments: [String: PlistValue]

    /// One argument, or nil.
    public subscript(argument: String) -> PlistValue? { arguments[argument] }
}

extension ActionOutcome {
    /// Performed with what `body` returns, or declined with what it throws: a broker's
    /// refusal as "code: message" (`permissionDenied: ...`), so that the caller sees why.
    @MainActor
    public static func performing(_ body: () async throws -> PlistValue?) async -> ActionOutcome {
        do {
            return .performed(try await body())
        } catch let error as BrokerError {
            return .declined("\(error.code): \(error.message)")
        } catch {
            return .declined("\(error)")
        }
    }
}

/// Handed to `restoreInteractionState`: extend to finish later, then complete. The broker
/// closes a scene that does not complete within its restoration deadline (default 5 s).
@MainActor
public final class RestorationRequest {
    private(set) var extended = false
    private var completion: CheckedContinuation<Void, Never>?
    private var completed = false
    private let onExtend: () -> Void

    init(onExtend: @escaping () -> Void) {
        self.onExtend = onExtend
    }

    /// Finish later: the broker is told (a `restorationExtended` event) and waits for
    /// `complete()` until its restoration deadline.
    public func extend() {
        guard !extended else { return }
        extended = true
        onExtend()
    }

    /// The interaction state is back: the broker may bring the scene to the foreground.
    public func complete() {
        guard !completed else { return }
        completed = true
        completion?.resume()
        completion = nil
    }

    func waitForCompletion() async {
        if completed || !extended { return }
        await withCheckedContinuation { completion = $0 }
    }
}
