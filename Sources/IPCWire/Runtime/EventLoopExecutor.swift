import CLinuxShim
import NIOCore
import NIOPosix

/// How a process runs its tasks and sockets.
package enum WireRuntime {
    /// Makes NIO's event loops Swift concurrency's global executor, so a frame read on an event
    /// loop and the task that handles it run on the same thread: no wake-up of another thread
    /// per message. Call it first thing in `main`, once per process. `loops` sizes the shared
    /// event loop group (nil: one per core); a client that talks over one connection at a time
    /// wants 1, so its tasks and its socket never sit on different threads. Returns whether it
    /// took effect (false: tasks stay on Dispatch's pool, which works, only with more hops).
    @discardableResult
    public static func runTasksOnEventLoops(loops: Int? = nil) -> Bool {
        if let loops { NIOSingletons.groupLoopCountSuggestion = loops }
        // Our own hook first: NIO's (which it can install only where the runtime's hook is in
        // the dynamic symbol table, not in a static binary) runs each job as its loop's serial
        // executor's, which costs a hop per actor entered (see `runAsGlobal`).
        if installHook(groupHook) { return true }
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }

    private static let groupHook: EnqueueGlobalHook = { job, _ in
        // `any()` stays on the calling thread's loop when it is one of the group's: a task
        // started on an event loop runs there, with no thread switch.
        runAsGlobal(job, on: MultiThreadedEventLoopGroup.singleton.any())
    }

    /// Runs a job the runtime gave the global executor on `loop`, as the global executor runs
    /// its own: on the generic executor, not as a job of the loop's serial executor (NIO's
    /// `enqueue`). A task running as the loop's job had an executor of its own to leave each
    /// time it entered an actor or a nonisolated function, so each such step went back
    /// through the loop's queue instead of continuing on the thread (`callgrind`: four more
    /// jobs run per `wmctl ping`).
    private static func runAsGlobal(_ job: UnownedJob, on loop: any EventLoop) {
        loop.execute { job.runSynchronously(on: generic) }
    }

    /// The generic executor, which the runtime writes as an executor reference with no
    /// identity and no implementation (two zero words: its ABI, stable on every platform the
    /// runtime ships on). Swift has no public spelling for it.
    private static let generic: UnownedSerialExecutor = {
        precondition(MemoryLayout<UnownedSerialExecutor>.size == 2 * MemoryLayout<UInt>.size)
        return unsafeBitCast((UInt(0), UInt(0)), to: UnownedSerialExecutor.self)
    }()

    /// Makes the calling thread (the process's main thread, first thing in `main`, before any
    /// task) the process's only event loop and every task's executor, runs `body` there, and
    /// exits with status 0 once it returns. For a short-lived client such as wmctl: it starts no
    /// thread at all, where `runTasksOnEventLoops` starts one and leaves the main thread
    /// waiting. Falls back to that when the runtime's hook is taken already.
    public static func runOnThisThread(_ body: @escaping @Sendable () async -> Void) -> Never {
        MultiThreadedEventLoopGroup.withCurrentThreadAsEventLoop { loop in
            thisThreadLoop = loop
            if !installHook(thisThreadHook) { runTasksOnEventLoops(loops: 1) }
            // Detached: a task inheriting the main actor would wait for Dispatch's main queue,
            // which nothing drains while this thread runs the loop.
            Task.detached {
                await body()
                exit(0)
            }
        }
        fatalError("the main thread's event loop stopped")
    }

    /// The loop `runOnThisThread` made of the main thread: set once, before the hook that
    /// reads it is installed.
    nonisolated(unsafe) private static var thisThreadLoop: (any EventLoop)?

    private static let thisThreadHook: EnqueueGlobalHook = { job, _ in
        runAsGlobal(job, on: WireRuntime.thisThreadLoop!)
    }

    /// The runtime's hook type: a thin Swift function taking the job and the original enqueue.
    private typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    private static func installHook(_ hook: EnqueueGlobalHook) -> Bool {
        guard let address = wb_concurrency_enqueue_global_hook() else { return false }
        let slot = UnsafeMutableRawPointer(address).assumingMemoryBound(to: UnsafeRawPointer?.self)
        // Someone else's hook (NIO's, or the host's): theirs stays.
        guard slot.pointee == nil else { return false }
        // Called first thing in main, before any other thread exists: a plain store.
        withUnsafePointer(to: hook) {
            $0.withMemoryRebound(to: UnsafeRawPointer.self, capacity: 1) { slot.pointee = $0.pointee }
        }
        return true
    }
}
