#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// What a prewarmed process runs once, before its Hello (so before its app launches and the
/// process joins its pool): the SDK's share of every open, with made-up values. A connect
/// command is decoded as the wire decodes it and turned into the scene's values (its session,
/// activities, defaults and storage), and a report and an answer are encoded as the scene
/// sends them.
///
/// Why: the first time a process runs these paths, Swift's runtime builds the generic types'
/// metadata from their mangled names and looks up protocol conformances by scanning every
/// conformance record in the binary, and the code and data pages are faulted in. Measured in a
/// prewarmed notes process (`perf record` over 12 opens), that was about 45% of what the scene
/// spent between reading its connect command and answering it. Done here, it is paid while the
/// process waits in its pool, not while a user waits for a window. Nothing here reaches the
/// app or the broker.
@MainActor
enum PrewarmExercise {
    static func run() {
        let activity = UserActivity(
            activityType: "windowbroker.prewarm", title: "prewarm", targetContentIdentifier: "prewarm",
            userInfo: [
                "text": .string("prewarm"), "count": .integer(1), "ratio": .real(0.5), "flag": .bool(true),
                "bytes": .data(Data([1, 2, 3])), "when": .date(Date(timeIntervalSince1970: 0)), "link": .url("file:///"),
                "list": .list([.string("a"), .integer(2)]), "nested": .dictionary(["key": .string("value")]), "none": .null,
            ],
            keywords: ["prewarm"], isEligibleForSearch: true, interactionState: Data([0]), persistentIdentifier: "prewarm")
        let plist = PlistValue.wire(dictionary: activity.userInfo)
        let command = Envelope.with {
            $0.id = 1
            $0.workerCommand = .with {
                $0.kind = .connect(.with {
                    $0.session = .with {
                        $0.id = SessionID().description
                        $0.appID = "prewarm"
                        $0.configuration = "prewarm"
                        $0.role = "windowApplication"
                        $0.title = "prewarm"
                        $0.state = .foregroundActive
                        $0.createdAt = 1
                        $0.launchCount = 1
                    }
                    $0.newSession = true
                    $0.delegateName = "prewarm"
                    $0.discardedSessionIds = [SessionID().description]
                    $0.userActivities = [activity.wire]
                    $0.restorationActivity = activity.wire
                    $0.availableConfigurations = ["prewarm"]
                    $0.defaults = plist
                    $0.storage = plist
                    $0.updateSequence = 1
                    $0.then = [.with { $0.transition = .willEnterForeground }, .with { $0.transition = .didBecomeActive }]
                })
            }
        }
        guard let bytes = try? command.serializedBytes() as [UInt8],
              let decoded = try? Envelope(serializedBytes: bytes),
              case .workerCommand(let worker)? = decoded.body, case .connect(let connect)? = worker.kind
        else { return }
        // As `SceneRuntime.connectScene` takes them.
        let restoration = try? UserActivity(wire: connect.restorationActivity, maxBytes: .max)
        let activities = connect.userActivities.compactMap { try? UserActivity(wire: $0, maxBytes: .max) }
        _ = try? PlistValue.dictionary(wire: connect.defaults, path: "defaults")
        let storage = (try? PlistValue.dictionary(wire: connect.storage, path: "storage")) ?? [:]
        _ = (SessionID(connect.session.id), AppID(connect.session.appID), connect.discardedSessionIds.compactMap(SessionID.init))
        // What the scene sends back, encoded: its report (title, activity, conditions, storage)
        // and the answer; and what it reads back, an acknowledgement, decoded.
        let current = restoration ?? activities.first ?? activity
        let report = Envelope.with {
            $0.id = 2
            $0.workerMessage = .with {
                $0.kind = .sceneUpdate(.with {
                    $0.title = current.title
                    $0.userActivity = current.wire
                    $0.activationConditions = ActivationConditions(canActivate: ["prewarm"], prefersToActivate: ["prewarm"]).wire
                })
            }
        }
        let storageChange = Envelope.with {
            $0.id = 3
            $0.workerMessage = .with {
                $0.kind = .storage(.with {
                    $0.set = PlistValue.wire(dictionary: storage)
                    $0.removed = ["prewarm"]
                })
            }
        }
        let answer = Envelope.with {
            $0.replyTo = 1
            $0.workerMessage = .with { $0.kind = .connected(.with { $0.configuration = "prewarm" }) }
        }
        for envelope in [report, storageChange, answer] { _ = try? envelope.serializedBytes() as [UInt8] }
        exerciseOutgoing(report)
        let ack = Envelope.with {
            $0.replyTo = 2
            $0.workerMessage = .with { $0.ack = .init() }
        }
        if let bytes = try? ack.serializedBytes() as [UInt8] { _ = try? Envelope(serializedBytes: bytes) }
        exerciseScene(current, storage: storage)
    }

    /// How the runtime queues what a scene says (`SceneRuntime.publish`, its written count):
    /// an update merged into the one pending, and a count that runs what waits for it. Their
    /// types (an optional update, the count's list of waiters) were built from their mangled
    /// names at the first open, 7 of the 9 such builds a prewarmed notes process still made
    /// between its connect command and its answer (gdb, breaking on the runtime's look-ups).
    private static func exerciseOutgoing(_ report: Envelope) {
        guard case .workerMessage(let message)? = report.body, case .sceneUpdate(let update)? = message.kind else { return }
        var pending: Windowbroker_V1_SceneUpdate? = update
        if let current = pending, [current.hasUserActivity, current.hasActivationConditions, !current.title.isEmpty].contains(true) {
            pending = nil
        }
        let erased: Any = pending as Any
        var written = GrowingCount()
        written.when(reaching: 2) {}
        written.when(reaching: 1) {}
        written.advance()
        written.giveUp(beyond: 1)
        _ = (erased, written.value)
    }

    /// What an app's `willConnect` does with its scene, on a scene that is connected to
    /// nothing: it subscribes to a default's changes and to updates, sets the title, the
    /// activity and the activation conditions (each published to a closure that drops it), and
    /// builds activity state from a string. In a prewarmed notes process these first uses were
    /// a fifth of what its `willConnect` cost (`perf`, 20 opens): generic metadata for the
    /// subscriptions, and `Data(String.utf8)` scanning every conformance record for
    /// `ContiguousBytes`, which `String.UTF8View` does not have.
    private static func exerciseScene(_ activity: UserActivity, storage: [String: PlistValue]) {
        let unconnected: @MainActor @Sendable (ControlRequest) async throws -> ControlReply = { _ in
            throw BrokerError(.connectionClosed, "the prewarm exercise's scene is not connected")
        }
        let scene = Scene(
            session: SceneSessionInfo(
                id: SessionID(), appID: AppID("prewarm"), configuration: "prewarm", role: "windowApplication",
                title: "prewarm", restorationActivity: activity),
            sync: SyncSnapshot(defaults: storage, storage: storage, sequence: 1),
            publisher: { _ in }, requester: unconnected, orderedRequester: unconnected, storageWriter: { _, _ in })
        let changes = scene.defaults.changes(for: "prewarm")
        let updates = scene.updates
        scene.title = "prewarm"
        var state = activity
        state.interactionState = Data("{\"prewarm\":1}".utf8)
        scene.userActivity = state
        scene.activationConditions = ActivationConditions(prefersToActivate: ["prewarm"])
        scene.defaults.apply(key: "prewarm", value: .bool(true))
        scene.broadcast(UpdateEvent(name: "prewarm", payload: storage))
        scene.finishUpdates()
        _ = (changes, updates)
    }
}
