import Foundation

/// One serial queue per session, owned by the broker's executor: operations on one session run
/// in arrival order, operations on different sessions run side by side. Nothing holds a queue
/// while it waits for another session's queue (focus changes of other scenes are enqueued on
/// their own queues), so a scene that hangs costs only its own session.
struct SessionQueues {
    private struct Queue {
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Present while an operation on the session runs; its waiters are the operations behind it.
    private var queues: [UUID: Queue] = [:]

    /// Takes the session's turn when nothing runs on it; otherwise the caller must `wait`.
    /// Every turn taken is given back with exactly one `leave`.
    mutating func tryEnter(_ id: UUID) -> Bool {
        guard queues[id] != nil else {
            queues[id] = Queue()
            return true
        }
        return false
    }

    mutating func wait(_ id: UUID, _ continuation: CheckedContinuation<Void, Never>) {
        queues[id, default: Queue()].waiters.append(continuation)
    }

    mutating func leave(_ id: UUID) {
        guard var queue = queues[id] else { return }
        if queue.waiters.isEmpty {
            queues[id] = nil
        } else {
            let next = queue.waiters.removeFirst()
            queues[id] = queue
            next.resume()
        }
    }

    /// How many operations run or wait on this session.
    func depth(_ id: UUID) -> Int {
        queues[id].map { $0.waiters.count + 1 } ?? 0
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
