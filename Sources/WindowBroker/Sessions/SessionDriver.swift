import Foundation
import IPCWire

/// The one owner of a session while the broker runs: its `SceneSession`, the process that shows
/// it, what that scene was told (key, snapshot, search entry), and its mailbox.
///
/// The mailbox is the session's single ordered line: every operation on the session (a
/// request, a focus change decided for it, its window closing, a reclaim) takes its place when
/// it is decided, synchronously, and runs when its turn comes; its lifecycle moves only by the
/// pure reducer (`SessionLifecycle`), run by `drive` in that turn. Operations on different
/// sessions run side by side, so a scene that hangs costs only its own session.
///
/// A driver lives in its host's isolation (it is not `Sendable`): the broker holds one per
/// session and reaches a session's state only through it, and the driver reaches nothing of
/// the broker's but what `SessionHost` offers.
final class SessionDriver {
    let id: SessionID
    var session: SceneSession
    /// The scene's process; nil while the session is unattached.
    var worker: WorkerHandle?
    var mailbox = Mailbox()
    /// Told didBecomeKey and not told otherwise since.
    var toldKey = false
    /// The newest picture of its window (`SnapshotStore`), when there is one.
    var snapshot: SnapshotStore.Info?
    /// The handle its window is exported under while it is mapped (xdg-foreign): a prominent
    /// scene presented over it is made its child. Its process's, gone with it.
    var windowHandle: String?
    /// What the search index holds for it: nil when unknown, a box of nil for no activity.
    /// Boxed, as it is unknown for every session that has not run since the start.
    var indexed: Boxed<UserActivity?>?
    /// Requests the scene has in flight (each answered in a task of its own), and whether its
    /// excess is being refused (logged once per burst).
    var requestsInFlight = 0
    var refusingRequests = false
    /// The scene's report being committed (the lane's next report waits for it); nil once done.
    var reportCommitting: Task<Void, Never>?
    /// A read of its saved activities from the store, started ahead of the step that needs
    /// them (`readSavedActivitiesAhead`).
    var savedActivitiesRead: Task<(saved: SavedActivities, damage: [String]), any Error>?
    /// Its process, started while its record was committed (`startEarly`), until the launch
    /// step takes it.
    var earlyStart: Task<WorkerHandle, any Error>?

    init(_ session: SceneSession) {
        self.id = session.id
        self.session = session
    }

    var appID: AppID { session.appID }
    /// A running process that finished connecting: the scene can take commands.
    var isConnected: Bool { worker != nil && session.state.isConnected }
}

/// One serial line of operations: they run in the order they took their place. A place is a
/// ticket taken synchronously, at the moment the work is decided, so work handed to a task
/// started later still runs before anything decided after it.
struct Mailbox {
    /// The ticket whose turn it is (or the next to come when none is running).
    private var serving: UInt64 = 0
    private var next: UInt64 = 0
    private var running = false
    /// Tickets waiting for their turn.
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]

    /// Nothing is running or queued.
    var isIdle: Bool { !running && serving == next }

    /// A place in line. Every ticket taken must be used by exactly one `tryEnter` (or `wait`)
    /// and then one `leave`.
    mutating func take() -> UInt64 {
        defer { next += 1 }
        return next
    }

    /// Whether `ticket` may run now; when it may, it is running.
    mutating func tryEnter(ticket: UInt64) -> Bool {
        guard !running, serving == ticket else { return false }
        running = true
        return true
    }

    mutating func wait(ticket: UInt64, _ continuation: CheckedContinuation<Void, Never>) {
        waiters[ticket] = continuation
    }

    /// The running ticket is done: the next one's turn.
    mutating func leave() {
        serving += 1
        running = false
        if let next = waiters.removeValue(forKey: serving) {
            running = true
            next.resume()
        }
        // Otherwise its holder has not asked for its turn yet; `tryEnter` will find it.
    }
}

/// One `Mailbox` per key, for state that is not a session's (an app's shared defaults).
struct SerialQueues<Key: Hashable> {
    private var lines: [Key: Mailbox] = [:]

    mutating func take(_ key: Key) -> UInt64 {
        lines[key, default: Mailbox()].take()
    }

    mutating func tryEnter(_ key: Key, ticket: UInt64) -> Bool {
        lines[key, default: Mailbox()].tryEnter(ticket: ticket)
    }

    mutating func wait(_ key: Key, ticket: UInt64, _ continuation: CheckedContinuation<Void, Never>) {
        lines[key]?.wait(ticket: ticket, continuation)
    }

    mutating func leave(_ key: Key) {
        lines[key]?.leave()
        if lines[key]?.isIdle == true { lines[key] = nil }  // nothing queued: forget the key
    }
}

extension Broker {
    /// Runs `body` in the session's turn: after every operation on it that took its place
    /// earlier. A session that does not exist (any more) is an error.
    func onSession<T: Sendable>(_ id: SessionID, _ body: () async throws -> T) async throws -> T {
        let driver = try driver(id)
        return try await inTurn(of: driver, ticket: driver.mailbox.take(), body)
    }

    /// Runs `body` in the turn of a place taken earlier (`driver.mailbox.take()`).
    func inTurn<T: Sendable>(of driver: SessionDriver, ticket: UInt64, _ body: () async throws -> T) async throws -> T {
        if !driver.mailbox.tryEnter(ticket: ticket) {
            await withCheckedContinuation { driver.mailbox.wait(ticket: ticket, $0) }
        }
        defer { driver.mailbox.leave() }
        return try await body()
    }

    /// Work decided now for a session, run in its turn by a task of its own (a focus change
    /// for another scene, telling a scene it lost the key). Nothing when the session is gone.
    @discardableResult
    func laterOnSession<T: Sendable>(_ id: SessionID, orElse fallback: T, _ body: @escaping @Sendable () async -> T) -> Task<T, Never> {
        guard let driver = drivers[id] else { return Task { fallback } }
        let ticket = driver.mailbox.take()
        return Task {
            (try? await self.inTurn(of: driver, ticket: ticket, body)) ?? fallback
        }
    }

    /// The session's driver, or the error a request about it gets.
    func driver(_ id: SessionID) throws(BrokerError) -> SessionDriver {
        if let driver = drivers[id] { return driver }
        if discarded.contains(id) {
            throw BrokerError(.sessionDiscarded, "session \(id) was discarded (closed); open a new scene instead")
        }
        throw Self.noSuchSession(id)
    }
}
