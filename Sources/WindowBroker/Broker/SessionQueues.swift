import Foundation

/// One serial queue per key (a session, an app's defaults), owned by the broker's executor:
/// operations on one key run in arrival order, operations on different keys run side by side.
/// Nothing holds a queue while it waits for another key's queue (focus changes of other
/// scenes are enqueued on their own queues), so a scene that hangs costs only its own session.
struct SerialQueues<Key: Hashable> {
    /// Present while an operation on the key runs: the operations waiting behind it.
    private var waiting: [Key: [CheckedContinuation<Void, Never>]] = [:]

    /// Takes the key's turn when nothing runs on it; otherwise the caller must `wait`.
    /// Every turn taken is given back with exactly one `leave`.
    mutating func tryEnter(_ key: Key) -> Bool {
        guard waiting[key] != nil else {
            waiting[key] = []
            return true
        }
        return false
    }

    mutating func wait(_ key: Key, _ continuation: CheckedContinuation<Void, Never>) {
        waiting[key, default: []].append(continuation)
    }

    mutating func leave(_ key: Key) {
        guard let queue = waiting[key] else { return }
        guard let next = queue.first else {
            waiting[key] = nil
            return
        }
        waiting[key] = Array(queue.dropFirst())  // the turn passes to `next`
        next.resume()
    }
}

typealias SessionQueues = SerialQueues<UUID>

extension Broker {
    /// Runs `body` in the session's turn: after every operation on it that arrived earlier.
    func onSession<T: Sendable>(_ id: UUID, _ body: () async throws -> T) async throws -> T {
        if !sessionQueues.tryEnter(id) {
            await withCheckedContinuation { sessionQueues.wait(id, $0) }
        }
        defer { sessionQueues.leave(id) }
        return try await body()
    }
}
