import Foundation
import IPCWire

/// How a scene's process came to be for an open or activate.
public enum LaunchKind: String, Sendable {
    case existing, spawned, prewarmed, forked

    var wire: Windowbroker_V1_LaunchKind {
        switch self {
        case .existing: .existing
        case .spawned: .spawned
        case .prewarmed: .prewarmed
        case .forked: .forked
        }
    }
}

/// One published event: what happened, to which session of which app, and when. Subscribers
/// (`watch` connections, D-Bus, the systemd status line) get these; a `watch` connection puts
/// them on the wire (`wire`).
package struct EventRecord: Sendable, Equatable {
    package var time: Date
    /// nil: the event is the broker's own (pressure) or an app's (a prewarmed process).
    package var session: SessionID?
    package var app: AppID
    /// The session's title when the event was published ("" without a session).
    package var title: String
    package var event: BrokerEvent

    /// The wire record `wmctl watch` reads.
    package var wire: LifecycleEvent {
        .with {
            $0.time = time.timeIntervalSince1970
            $0.sessionID = session?.description ?? ""
            $0.appID = app.rawValue
            $0.title = title
            $0.event = event.name
            $0.detail = event.detail
            $0.kind = event.wireKind
        }
    }
}

/// Everything the broker publishes, typed end to end: the schema's `LifecycleEvent.kind` oneof
/// carries the same cases. `name` and `detail` are derived, for people and filters.
package enum BrokerEvent: Sendable, Equatable {
    case created(configuration: String)
    case launched(pid: Int32, launch: LaunchKind)
    /// A lifecycle callback the scene completed, and the state it left the scene in.
    case callback(LifecycleStep, SceneState)
    case restorationSaved(committed: Bool)
    case restorationExtended
    case continued(activityType: String)
    case discardsDelivered([SessionID])
    /// The process ended because the broker ended it.
    case exited(DisconnectReason, pid: Int32)
    /// The process ended on its own, or lost its connection.
    case crashed(DisconnectReason, pid: Int32)
    case discarded(delivered: Bool)
    case memoryWarning(PressureLevel, freedBytes: UInt64)
    case reclaimed(PressureLevel, freedBytes: UInt64, seconds: Double, notes: [String])
    case pressureChanged(from: PressureLevel, to: PressureLevel, reasons: [String], simulated: Bool)
    /// A scene asked for a scene (the event's session is the requester); nil target: a new one.
    case activationRequested(target: SessionID?, activityType: String, presentation: Presentation)
    case destructionRequested(target: SessionID, dismissal: Dismissal)
    case refreshRequested(target: SessionID)
    /// An update event was posted to the app's connected scenes (the session: the poster, if a scene).
    case updatePosted(name: String, sequence: UInt64, receivers: Int)
    case defaultsChanged(key: String, removed: Bool, sequence: UInt64)
    /// The session's update queue overflowed: it gets one notice for this range.
    case updatesDropped(from: UInt64, to: UInt64)
    /// A shortcut reached a command (`result`: performed, declined, unhandled).
    case commandPerformed(command: String, shortcut: String, handledBy: String, result: String)
    /// The session became the key scene (keyboard focus) or stopped being it; `source`: who
    /// moved it (`broker`: an activation or a scene leaving; `compositor`: the user).
    case keyChanged(isKey: Bool, source: String)

    /// The name `wmctl watch` prints and `--event` filters on.
    public var name: String {
        switch self {
        case .created: "created"
        case .launched: "launched"
        case .callback(let step, _): step.callbackName
        case .restorationSaved: "restorationSaved"
        case .restorationExtended: "restorationExtended"
        case .continued: "continue"
        case .discardsDelivered: "didDiscardSceneSessions"
        case .exited: "exited"
        case .crashed: "crashed"
        case .discarded: "discarded"
        case .memoryWarning: "didReceiveMemoryWarning"
        case .reclaimed: "reclaimed"
        case .pressureChanged: "pressure"
        case .activationRequested: "activationRequested"
        case .destructionRequested: "destructionRequested"
        case .refreshRequested: "refreshRequested"
        case .updatePosted: "updatePosted"
        case .defaultsChanged: "defaultsChanged"
        case .updatesDropped: "updatesDropped"
        case .commandPerformed: "commandPerformed"
        case .keyChanged(let isKey, _): isKey ? "didBecomeKey" : "didResignKey"
        }
    }

    /// Every name an event can have, for validating filters.
    public static let names = Set(WireProtocol.eventNames)

    public var detail: String {
        switch self {
        case .created(let configuration): configuration
        case .launched(let pid, let launch): "pid \(pid), \(launch.rawValue)"
        case .callback(_, let state): state.rawValue
        case .restorationSaved(let committed): committed ? "committed" : "nothing new committed"
        case .restorationExtended: ""
        case .continued(let type): type
        case .discardsDelivered(let ids): ids.map { $0.description }.joined(separator: ",")
        case .exited(let reason, _), .crashed(let reason, _): reason.description
        case .discarded(let delivered): delivered ? "delivered" : "pending"
        case .memoryWarning(let level, let freed): "level=\(level) freed=\(freed) bytes"
        case .reclaimed(let level, let freed, let seconds, let notes):
            "level=\(level) freed=\(freed) bytes took=\(String(format: "%.1f", seconds * 1000)) ms" + (notes.isEmpty ? "" : "; " + notes.joined(separator: "; "))
        case .pressureChanged(let from, let to, let reasons, let simulated):
            simulated ? "simulated \(to)" : "\(from) -> \(to): \(reasons.joined(separator: "; "))"
        case .activationRequested(let target, let type, let presentation):
            "\(target?.description ?? "new") \(type.isEmpty ? "" : type + " ")\(presentation.rawValue)"
        case .destructionRequested(let target, let dismissal):
            "\(target) \(dismissal.rawValue)"
        case .refreshRequested(let target): target.description
        case .updatePosted(let name, let sequence, let receivers): "\(name) #\(sequence) to \(receivers) scene\(receivers == 1 ? "" : "s")"
        case .defaultsChanged(let key, let removed, let sequence): "\(key) \(removed ? "removed" : "set") #\(sequence)"
        case .updatesDropped(let from, let to): "#\(from)...#\(to)"
        case .commandPerformed(let command, let shortcut, let handledBy, let result):
            "\(command) (\(shortcut.isEmpty ? "menu" : shortcut)) \(result)\(handledBy.isEmpty ? "" : " by \(handledBy)")"
        case .keyChanged(_, let source): source
        }
    }

    var wireKind: LifecycleEvent.OneOf_Kind {
        switch self {
        case .created(let configuration):
            .created(.with { $0.configuration = configuration })
        case .launched(let pid, let launch):
            .launched(.with {
                $0.pid = pid
                $0.launch = launch.wire
            })
        case .callback(let step, let state):
            .callback(.with {
                $0.callback = step.wireCallback
                $0.state = state.wire
            })
        case .restorationSaved(let committed):
            .restorationSaved(.with { $0.committed = committed })
        case .restorationExtended:
            .restorationExtended(.init())
        case .continued(let type):
            .continued(.with { $0.activityType = type })
        case .discardsDelivered(let ids):
            .discardsDelivered(.with { $0.sessionIds = ids.map { $0.description } })
        case .exited(let reason, let pid):
            .exited(.with {
                $0.reason = reason.description
                $0.pid = pid
            })
        case .crashed(let reason, let pid):
            .crashed(.with {
                $0.reason = reason.description
                $0.pid = pid
            })
        case .discarded(let delivered):
            .discarded(.with { $0.delivered = delivered })
        case .memoryWarning(let level, let freed):
            .memoryWarning(.with {
                $0.level = level.wire
                $0.freedBytes = freed
            })
        case .reclaimed(let level, let freed, let seconds, let notes):
            .reclaimed(.with {
                $0.level = level.wire
                $0.freedBytes = freed
                $0.seconds = seconds
                $0.notes = notes
            })
        case .pressureChanged(let from, let to, let reasons, let simulated):
            .pressure(.with {
                $0.from = from.wire
                $0.to = to.wire
                $0.reasons = reasons
                $0.simulated = simulated
            })
        case .activationRequested(let target, let type, let presentation):
            .activationRequested(.with {
                $0.targetSessionID = target?.description ?? ""
                $0.activityType = type
                $0.presentation = presentation.wire
            })
        case .destructionRequested(let target, let dismissal):
            .destructionRequested(.with {
                $0.targetSessionID = target.description
                $0.dismissal = dismissal.wire
            })
        case .refreshRequested(let target):
            .refreshRequested(.with { $0.targetSessionID = target.description })
        case .updatePosted(let name, let sequence, let receivers):
            .updatePosted(.with {
                $0.name = name
                $0.sequence = sequence
                $0.receivers = UInt32(receivers)
            })
        case .defaultsChanged(let key, let removed, let sequence):
            .defaultsChanged(.with {
                $0.key = key
                $0.removed = removed
                $0.sequence = sequence
            })
        case .updatesDropped(let from, let to):
            .updatesDropped(.with {
                $0.from = from
                $0.to = to
            })
        case .commandPerformed(let command, let shortcut, let handledBy, let result):
            .commandPerformed(.with {
                $0.command = command
                $0.shortcut = shortcut
                $0.handledBy = handledBy
                $0.result = result
            })
        case .keyChanged(let isKey, let source):
            .keyChanged(.with {
                $0.isKey = isKey
                $0.source = source
            })
        }
    }
}

extension LifecycleStep {
    var wireCallback: Windowbroker_V1_Callback {
        switch self {
        case .connect: .willConnect
        case .restoreInteractionState: .restoreInteractionState
        case .willEnterForeground: .willEnterForeground
        case .didBecomeActive: .didBecomeActive
        case .willResignActive: .willResignActive
        case .didEnterBackground: .didEnterBackground
        case .disconnect: .didDisconnect
        case .launch, .saveRestorationActivity: .unspecified
        }
    }
}
