import Foundation
import IPCWire

/// Why a session's process went away last time. Stored with the session and shown by wmctl.
public enum DisconnectReason: Sendable, Equatable, CustomStringConvertible {
    /// `wmctl reclaim`: the system took the process away after saving its state.
    case reclaimed
    /// The memory-pressure policy reclaimed it.
    case memoryPressure
    /// The worker exited on its own with this status.
    case exited(code: Int32)
    /// The worker died from a signal the broker did not send.
    case crashed(signal: Int32)
    /// The worker missed a deadline and was killed.
    case timedOut
    /// The broker stopped (gracefully or not) while the scene was connected.
    case brokerStopped
    /// The user discarded the session.
    case discarded
    /// The worker closed its connection but kept running; the broker stopped it.
    case connectionLost
    /// The user closed the scene's window: disconnected after saving, the session kept.
    case closedByUser
    /// An idle prewarmed process started from a manifest that has since changed.
    case appChanged
    /// The scene's compositor went away (ended or restarted): saved and disconnected, put back
    /// on screen when a compositor is there again.
    case compositorLost

    public var description: String {
        switch self {
        case .reclaimed: "reclaimed"
        case .memoryPressure: "memoryPressure"
        case .exited(code: 0): "exited"  // ended on its own, cleanly: not a crash
        case .exited(let code): "crashed(exit \(code))"
        case .crashed(let signal): "crashed(\(Self.signalName(signal)))"
        case .timedOut: "timedOut"
        case .brokerStopped: "brokerStopped"
        case .discarded: "discarded"
        case .connectionLost: "connectionLost"
        case .closedByUser: "closedByUser"
        case .appChanged: "appChanged"
        case .compositorLost: "compositorLost"
        }
    }

    public init?(stored: String) {
        switch stored {
        case "reclaimed": self = .reclaimed
        case "memoryPressure": self = .memoryPressure
        case "timedOut": self = .timedOut
        case "brokerStopped": self = .brokerStopped
        case "discarded": self = .discarded
        case "connectionLost": self = .connectionLost
        case "closedByUser": self = .closedByUser
        case "appChanged": self = .appChanged
        case "compositorLost": self = .compositorLost
        case "exited": self = .exited(code: 0)
        default:
            if stored.hasPrefix("crashed(exit "), let code = Int32(stored.dropFirst(13).dropLast()) {
                self = .exited(code: code)
            } else if stored.hasPrefix("crashed("), let signal = Self.signalNumber(String(stored.dropFirst(8).dropLast())) {
                self = .crashed(signal: signal)
            } else {
                return nil
            }
        }
    }

    private static let signalNames: [Int32: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
        8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
        14: "SIGALRM", 15: "SIGTERM",
    ]

    static func signalName(_ signal: Int32) -> String { signalNames[signal] ?? "signal \(signal)" }

    static func signalNumber(_ name: String) -> Int32? {
        signalNames.first { $0.value == name }?.key ?? Int32(name.replacingOccurrences(of: "signal ", with: ""))
    }
}

/// One entry in the switcher: outlives its worker process and broker restarts, ends only when discarded.
public struct SceneSession: Sendable, Equatable {
    public let id: SessionID
    public let appID: AppID
    public var configuration: String
    public var role: String
    public var title: String
    public var state: SceneState
    public var createdAt: Date
    public var lastActiveAt: Date
    public var lastDisconnect: DisconnectReason?
    public var launchCount: Int
    /// Its saved activities while they are in memory: from its launch until its process is
    /// gone, and for an operation that needs them. Nil while only the store has them (a session
    /// with no process): `SessionDriver.savedActivities` reads them back.
    public var saved: SavedActivities? {
        get { savedBox?.value }
        set { savedBox = newValue.map(Boxed.init) }
    }
    /// Behind one pointer: inline, the three activities took 353 of a session's 536 bytes, kept
    /// for every stored session whether it had them in memory or not.
    private var savedBox: Boxed<SavedActivities>? = Boxed(SavedActivities())
    /// Whether a restoration activity was saved, and whether a relaunch restores from one, as
    /// when the activities last left memory.
    private var restorationSavedWhenReleased = false
    private var restoresWhenReleased = false
    public var activationConditions: ActivationConditions
    /// How the scene was last brought forward, and the scene that asked for it (nil: wmctl).
    public var presentation: Presentation = .standard
    public var requestedBy: SessionID?
    /// The scene connected at least once during this run (a new session that never did is
    /// removed when its launch fails).
    public var hasConnected = false
    /// restoreInteractionState failures in a row with the current restoration activity.
    public var restorationFailures = 0
    /// The scene's own storage (`@SceneStorage`): saved with the session, handed back at every
    /// connection, deleted with the session.
    public var storage: [String: PlistValue] = [:]

    public init(id: SessionID = SessionID(), appID: AppID, configuration: String, role: String, title: String, now: Date = Date()) {
        self.id = id
        self.appID = appID
        self.configuration = configuration
        self.role = role
        self.title = title
        self.state = .unattached
        self.createdAt = now
        self.lastActiveAt = now
        self.lastDisconnect = nil
        self.launchCount = 0
        self.activationConditions = .default
    }

    /// Whether a restoration activity is saved, known with the activities in memory or not
    /// (the switcher lists it for every session).
    public var hasRestoration: Bool { saved.map { $0.restoration != nil } ?? restorationSavedWhenReleased }

    /// Whether its next connection restores from a saved activity (`activityToRestore`), known
    /// with the activities in memory or not: a launch plans its steps from it while it reads
    /// them back.
    public var restores: Bool { saved.map { $0.activityToRestore != nil } ?? restoresWhenReleased }

    /// Lets go of the saved activities, which the store has: a session without a process keeps
    /// none in memory (they were most of what a stored session cost the broker).
    public mutating func releaseSaved() {
        guard let saved else { return }
        remember(saved)
        self.saved = nil
    }

    /// What a read of the store found, for a session that holds no activities in memory: what
    /// it knows of them follows (a damaged value set aside is no longer there to restore from).
    public mutating func rememberStored(_ stored: SavedActivities) {
        if saved == nil { remember(stored) }
    }

    private mutating func remember(_ saved: SavedActivities) {
        restorationSavedWhenReleased = saved.restoration != nil
        restoresWhenReleased = saved.activityToRestore != nil
    }
}

/// A value kept behind one pointer: for a large field that is often empty, in what the broker
/// keeps one of for every stored session.
final class Boxed<Value: Sendable & Equatable>: Sendable, Equatable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }

    static func == (lhs: Boxed, rhs: Boxed) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }
}

/// A session's saved activities, as the store's activity tables hold them.
public struct SavedActivities: Sendable, Equatable {
    /// The last committed restoration activity (handed over when the scene went to the background).
    public var restoration: UserActivity?
    /// When `restoration` was committed.
    public var restorationSavedAt: Date?
    /// The activity the scene last reported as current; committed before the scene hears
    /// that the broker took it.
    public var currentActivity: UserActivity?
    /// When `currentActivity` was committed (nil: never, e.g. a refused write).
    public var currentSavedAt: Date?
    /// A restoration activity set aside after failing twice: kept, not handed to the scene.
    public var quarantined: UserActivity?
    /// When it was set aside: an activity saved after that is newer and wins over it.
    public var quarantinedAt: Date?

    public init() {}
}

/// Which of a session's stored activities a reconnecting scene gets.
public enum RestorationSource: String, Sendable, Equatable {
    /// The activity handed over when the scene last went to the background.
    case restoration
    /// The scene's current activity, committed after that (the scene ran on, typed more, and
    /// its process or the broker went away without another background).
    case current
}

extension SavedActivities {
    /// What a reconnecting scene gets back: the newest activity the broker committed. The
    /// current activity wins when it was committed after the restoration activity, so a
    /// crash of the scene or of the broker never rolls the scene back to an older state.
    public var activityToRestore: (activity: UserActivity, source: RestorationSource)? {
        if let current = currentActivity, let currentAt = currentSavedAt {
            guard let restoration, let restoredAt = restorationSavedAt, restoredAt >= currentAt else {
                return (current, .current)
            }
            return (restoration, .restoration)
        }
        return restoration.map { ($0, .restoration) }
    }

    /// What a search finds the session by: the current activity, else the restoration one
    /// (`SessionStore.searchEntries` reads the same from the store).
    public var searchable: UserActivity? { currentActivity ?? restoration }

    /// When the newest committed activity was saved (nil: none).
    public var newestSaveAt: Date? {
        [restoration == nil ? nil : restorationSavedAt, currentActivity == nil ? nil : currentSavedAt].compactMap { $0 }.max()
    }
}
