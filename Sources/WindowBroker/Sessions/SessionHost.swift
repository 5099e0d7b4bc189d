import Foundation
import IPCWire
import Logging

/// Everything a session's driver may use besides its own session, and nothing more: the
/// services it is given (store, pictures, search index, launcher), read-only views of what is
/// decided across sessions (the installed apps, focus), and the verbs that change shared state
/// on its behalf (launch slots, binding a process, events, updates). The broker is the one host
/// (`Broker/Broker+SessionHost.swift`); a driver runs isolated to it, in its session's turn, and
/// never reaches another session's state or the broker's own through it.
protocol SessionHost: Actor {
    // MARK: Services
    var configuration: BrokerConfiguration { get }
    var store: SessionStore { get }
    var snapshots: SnapshotStore { get }
    /// Nil when the index could not be opened (search is then refused).
    var searchIndex: SearchIndex? { get }
    var logger: Logger { get }
    var launcher: any WorkerLauncher { get }

    // MARK: What is decided across sessions (read only)
    /// The installed manifest of an app; nil once it is not installed any more.
    func manifest(_ app: AppID) -> AppManifest?
    var focus: FocusCoordinator { get }
    /// Sessions of the app discarded while none of its scenes ran, claimed by the scene that
    /// connects now (didDiscardSceneSessions); given back when its connection fails.
    func claimPendingDiscards(of app: AppID) -> [SessionID]
    func returnPendingDiscards(_ sessions: [SessionID], of app: AppID)
    /// The handle another session's window is exported under (xdg-foreign), while it is mapped.
    func windowHandle(of id: SessionID) -> String?
    /// Whether the broker runs (it starts no process while it stops).
    var isRunning: Bool { get }

    // MARK: Processes
    /// Takes a launch slot for a process of `app`, or says why none may start now.
    func admitLaunch(_ app: AppID) throws(BrokerError)
    /// A launch that held a slot is over (its process started, or did not).
    func launchSettled()
    func launchSucceeded(_ app: AppID)
    func launchFailed(_ app: AppID)
    /// A process of the app's pool, taken out of it; nil when none is ready.
    func takePrewarmed(_ app: AppID) -> WorkerHandle?
    func prewarmedCount(_ app: AppID) -> Int
    /// The process now shows the driver's session: a prewarmed one (supervised since its
    /// start) or one just launched for it (supervised from now on).
    func bind(_ worker: WorkerHandle, to driver: SessionDriver, prewarmed: Bool)
    /// A new process started: what the workers use is read again soon.
    func workerLaunched()
    /// Ends the session's process now and records why.
    func terminate(_ id: SessionID, reason: DisconnectReason) async
    /// The process closed its connection: it is stopped if it does not exit by itself.
    func reap(_ id: SessionID) async
    /// A process of the session failed to start: what it printed is kept for its app (`wmctl
    /// logs --app`), and its last lines are returned (once its output has ended, or soon).
    func failedToStart(_ pid: Int32, session: SessionID) async -> [String]

    // MARK: Records, events, derived data
    /// Writes the session's record as it is now.
    func persist(_ id: SessionID) async
    func emit(_ id: SessionID?, app: AppID, _ event: BrokerEvent)
    /// What `show` says of a session (its process, memory, key state).
    func status(_ session: SceneSession) -> SessionStatus
    /// Stored values that could not be read back, set aside: logged and reported by `status`.
    func noteDamage(_ damage: [String])
    /// An index write that did not land: the entry is written again at the session's next change.
    func indexWriteFailed(_ id: SessionID, activity: UserActivity?, _ error: any Error)

    // MARK: Updates and shared defaults (`Sync/`)
    /// The defaults as they are and the scene's place in its app's updates, taken together.
    func openOutlet(_ id: SessionID, app: AppID, connection: WireConnection) -> (defaults: [String: PlistValue], sequence: UInt64)
    func outletReady(_ id: SessionID)
    func closeOutlet(_ id: SessionID)

    // MARK: What a scene asks for on its lane
    func keyboardFocus(_ id: SessionID, focused: Bool)
    /// The user closed the scene's window: it disconnects, the session stays.
    func windowClosed(_ id: SessionID) async
    /// The scene's connection to the compositor broke: it is saved and disconnected, and put
    /// back on screen when a compositor is there again if it was on screen.
    func compositorLost(_ id: SessionID) async
    func keyInput(_ input: Windowbroker_V1_KeyInput, from id: SessionID) async -> Envelope.OneOf_Body
    /// A scene's request for scenes (requestSceneSessionActivation and friends).
    func answer(_ request: Windowbroker_V1_ControlRequest, from id: SessionID) async -> Envelope.OneOf_Body
    /// A staged report's commit, then its acknowledgement (or its refusal) and its index entry.
    func commitReport(
        _ change: SessionDriver.StagedChange, of id: SessionID, _ envelope: Envelope, on connection: WireConnection,
        refusing what: String, reindex: Bool) async
}
