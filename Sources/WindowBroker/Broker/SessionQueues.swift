import Foundation

/// One serial queue per key (a session, an app's defaults), owned by the broker's executor:
/// operations on one key run in the order they took their place, operations on different keys
/// run side by side. A place is a ticket taken synchronously, at the moment the work is decided,
/// so work handed to a task started later (a focus change for another scene) still runs before
/// anything decided after it. Nothing holds a queue while it waits for another key's queue, so
/// a scene that hangs costs only its own session.
struct SerialQueues<Key: Hashable> {
    private struct Line {
        /// The ticket whose turn it is (or the next to come when none is running).
        var serving: UInt64 = 0
        var next: UInt64 = 0
        var running = false
        /// Tickets waiting for their turn.
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private var lines: [Key: Line] = [:]

    /// A place in the key's queue. Every ticket taken must be used by exactly one `turn` and
    /// then one `leave`.
    mutating func take(_ key: Key) -> UInt64 {
        var line = lines[key] ?? Line()
        defer { line.next += 1; lines[key] = line }
        return line.next
    }

    /// Whether `ticket` may run now; when it may, the key is running it.
    mutating func tryEnter(_ key: Key, ticket: UInt64) -> Bool {
        guard var line = lines[key], !line.running, line.serving == ticket else { return false }
        line.running = true
        lines[key] = line
        return true
    }

    mutating func wait(_ key: Key, ticket: UInt64, _ continuation: CheckedContinuation<Void, Never>) {
        lines[key]?.waiters[ticket] = continuation
    }

    /// The running ticket is done: the next one's turn.
    mutating func leave(_ key: Key) {
        guard var line = lines[key] else { return }
        line.serving += 1
        line.running = false
        if line.serving == line.next {
            lines[key] = nil  // nothing queued: forget the key
            return
        }
        if let next = line.waiters.removeValue(forKey: line.serving) {
            line.running = true
            lines[key] = line
            next.resume()
        } else {
            lines[key] = line  // its holder has not asked for its turn yet; `tryEnter` will find it
        }
    }
}

typealias SessionQueues = SerialQueues<UUID>

extension Broker {
    /// Runs `body` in the session's turn: after every operation on it that took its place earlier.
    func onSession<T: Sendable>(_ id: UUID, _ body: () async throws -> T) async throws -> T {
        try await onSession(id, ticket: sessionQueues.take(id), body)
    }

    /// Runs `body` in the turn of a place taken earlier (`sessionQueues.take`).
    func onSession<T: Sendable>(_ id: UUID, ticket: UInt64, _ body: () async throws -> T) async throws -> T {
        if !sessionQueues.tryEnter(id, ticket: ticket) {
            await withCheckedContinuation { sessionQueues.wait(id, ticket: ticket, $0) }
        }
        defer { sessionQueues.leave(id) }
        return try await body()
    }
}
