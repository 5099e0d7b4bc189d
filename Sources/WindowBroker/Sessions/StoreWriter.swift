import Foundation

/// The store's writer: a thread of its own that runs the store's write transactions one at a
/// time, in the order they were handed over. GRDB runs each on this thread (its writer queue
/// is idle whenever this thread asks, as nothing else writes), so the commits come in the
/// hand-over's order. The thread ends once the writer is released and what was handed over
/// has run.
///
/// Why not GRDB's asynchronous writes: they go through Dispatch, and handing one over cost
/// the broker's event loop 30-120 µs (p50 about 45) on an open's path, before the prewarmed
/// scene's connect command could go out (marks in a probe build, 40 prewarmed opens). Here it
/// is a lock and a condition's signal.
///
/// `idle`, when given, runs on the thread whenever it has had nothing to do for its interval.
final class StoreWriter: Sendable {
    private let queue = JobQueue()

    init(idle: (interval: TimeInterval, job: @Sendable () -> Void)? = nil) {
        Thread { [queue] in
            nameThisThread("wb-store-write")
            queue.drain(idle: idle)
        }.start()
    }

    deinit {
        queue.close()
    }

    /// Runs `job` on the writer's thread, after everything handed over before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        queue.append(job)
    }

    /// `submit`, returning what `body` returns (or throws) once it ran.
    func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withUnsafeThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The jobs and the condition the thread waits on (separate from `StoreWriter`, which the
    /// thread must not keep alive).
    private final class JobQueue: @unchecked Sendable {
        /// Guards `jobs` and `closed`.
        private let condition = NSCondition()
        private var jobs: [@Sendable () -> Void] = []
        private var closed = false

        func append(_ job: @escaping @Sendable () -> Void) {
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        func close() {
            condition.lock()
            closed = true
            condition.signal()
            condition.unlock()
        }

        /// Runs the jobs as they come, each batch taken under the lock and run outside it,
        /// until the queue is closed and empty.
        func drain(idle: (interval: TimeInterval, job: @Sendable () -> Void)?) {
            var batch: [@Sendable () -> Void] = []
            let seconds = idle?.interval
            while true {
                condition.lock()
                while jobs.isEmpty, !closed {
                    guard let seconds else {
                        condition.wait()
                        continue
                    }
                    if !condition.wait(until: Date(timeIntervalSinceNow: seconds)), jobs.isEmpty, !closed {
                        condition.unlock()
                        idle?.job()
                        condition.lock()
                    }
                }
                if jobs.isEmpty {
                    condition.unlock()
                    return
                }
                swap(&batch, &jobs)
                condition.unlock()
                for job in batch { job() }
                batch.removeAll(keepingCapacity: true)
            }
        }
    }
}
