import Foundation

/// One serial queue per session, owned by the broker's executor: operations on one session run
/// in arrival order, operations on different sessions run side by side. Nothing holds a queue
/// while it waits for another session's queue (focus changes of other scenes are enqueued on
/// their own queues), so a scene that hangs costs only its own session.
struct SessionQueues {
    /// Present while an operation on the session runs: the operations waiting behind it.
    private var waiting: [UUID: [CheckedContinuation<Void, Never>]] = [:]

    /// Takes the session's turn when nothing runs on it; otherwise the caller must `wait`.
    /// Every turn taken is given back with exactly one `leave`.
    mutating func tryEnter(_ id: UUID) -> Bool {
        guard waiting[id] != nil else {
            waiting[id] = []
            return true
        }
        return false
    }

    mutating func wait(_ id: UUID, _ continuation: CheckedContinuation<Void, Never>) {
        waiting[id, default: []].append(continuation)
    }

    mutating func leave(_ id: UUID) {
        guard let queue = waiting[id] else { return }
        guard let next = queue.first else {
            waiting[id] = nil
            return
        }
        waiting[id] = Array(queue.dropFirst())  // the turn passes to `next`
        next.resume()
    }
}

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
