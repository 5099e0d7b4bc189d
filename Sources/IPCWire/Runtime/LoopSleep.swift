import NIOCore
import NIOPosix

extension WireRuntime {
    /// Suspends the task for `duration` on a timer of the calling thread's event loop (any
    /// loop of the shared group when the caller runs on none), and throws `CancellationError`
    /// when the task is cancelled first, as `Task.sleep` does.
    ///
    /// `Task.sleep` hands the timer to Dispatch: its manager thread is woken to arm it, and a
    /// worker thread to hand the task back to the event loop when it fires, or when a deadline
    /// that was cancelled runs out. A process whose tasks run on event loops
    /// (`runTasksOnEventLoops`) keeps its timers there, in the loop it already waits in.
    public static func sleep(for duration: Duration) async throws {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
        let timer = loop.scheduleTask(in: .nanoseconds(duration.nanoseconds)) {}
        try await withTaskCancellationHandler {
            do {
                try await timer.futureResult.value()
            } catch {
                throw CancellationError()
            }
        } onCancel: {
            timer.cancel()
        }
    }
}
