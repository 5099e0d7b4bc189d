import NIOCore
import NIOPosix

/// How a process runs its tasks and sockets.
package enum WireRuntime {
    /// Makes NIO's event loops Swift concurrency's global executor, so a frame read on an event
    /// loop and the task that handles it run on the same thread: no wake-up of another thread
    /// per message. Call it first thing in `main`, once per process. `loops` sizes the shared
    /// event loop group (nil: one per core); a client that talks over one connection at a time
    /// wants 1, so its tasks and its socket never sit on different threads.
    public static func runTasksOnEventLoops(loops: Int? = nil) {
        if let loops { NIOSingletons.groupLoopCountSuggestion = loops }
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
