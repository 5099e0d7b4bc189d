import Synchronization
import WindowBroker

/// A clock that moves only when the test says so (`advance(by:)`): a crash loop's wait, a
/// pressure level's hold or a drain deadline pass at once and exactly, instead of the test
/// sleeping through them. Sleepers whose deadline is reached wake in deadline order; a
/// cancelled sleeper wakes at once with `CancellationError`, as `Task.sleep` does.
public final class ManualClock: BrokerClock {
    private struct Sleeper {
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var elapsed: Duration = .zero
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        var cancelled: Set<Int> = []
    }

    private let origin = ContinuousClock.now
    private let state = Mutex(State())

    public init() {}

    public var now: ContinuousClock.Instant { origin + state.withLock { $0.elapsed } }

    /// How many tasks are asleep on this clock: a test waits for the broker to be waiting.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Next { case cancel, wake, sleep }
                let next: Next = state.withLock { state in
                    // Cancelled before it could sleep: the handler ran first and left word.
                    if state.cancelled.remove(id) != nil { return .cancel }
                    if duration <= .zero { return .wake }
                    state.sleepers[id] = Sleeper(deadline: state.elapsed + duration, continuation: continuation)
                    return .sleep
                }
                switch next {
                case .cancel: continuation.resume(throwing: CancellationError())
                case .wake: continuation.resume()
                case .sleep: break
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return Optional(sleeper) }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on by `duration`, waking every sleeper whose deadline it reaches.
    public func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.elapsed += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.elapsed }.sorted { $0.value.deadline < $1.value.deadline }
            for (id, _) in due { state.sleepers[id] = nil }
            return due.map(\.value.continuation)
        }
        for continuation in due { continuation.resume() }
    }
}
