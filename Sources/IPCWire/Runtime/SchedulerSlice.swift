import CLinuxShim
import NIOPosix

/// The broker's event loops ask the kernel for a short scheduler slice, so that a loop woken
/// by a peer takes its CPU at once instead of waiting behind whatever runs there.
///
/// Linux's scheduler (EEVDF, 6.6 and later) runs the eligible thread whose virtual deadline,
/// one slice ahead (1.4 ms by default on two CPUs), is earliest, and lets a running thread
/// keep its CPU for its slice unless the one that woke asked for a shorter slice (6.12 and
/// later). The broker's loops read every request and every answer; on two CPUs they waited
/// behind the store's writer, a scene's own work after its answer, the client. A short slice
/// decides who runs first, not how much CPU anyone gets: a thread's share is its weight (its
/// nice value), which stays as it was. Earlier kernels ignore the request.
///
/// Only the loops: nothing inherits it (threads and processes a marked thread starts, Dispatch's
/// workers and the store's writer among them, start with the default). Scenes keep the default
/// too, measured: with theirs short as well, a scene woken by a post took the broker's CPU
/// before the broker had written the post to the other scenes.
package enum SchedulerSlice {
    /// The shortest slice the kernel takes (it raises anything shorter to 0.1 ms).
    package static let interactive: UInt64 = 100_000

    /// Asks for the `interactive` slice for the calling thread. False where the kernel
    /// refused it (the thread keeps its slice and runs as before).
    @discardableResult
    package static func makeCurrentThreadInteractive() -> Bool {
        wb_set_thread_slice(interactive, 1) == 0
    }

    /// The calling thread's slice in nanoseconds as the kernel reports it; nil when it cannot
    /// be read.
    package static var currentThread: UInt64? {
        let slice = wb_thread_slice()
        return slice == 0 ? nil : slice
    }
}

extension WireRuntime {
    /// Gives each loop of the shared event loop group the short slice (`SchedulerSlice`).
    /// For a process whose loops others wait on: the broker's.
    public static func makeLoopsInteractive() {
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            loop.execute { SchedulerSlice.makeCurrentThreadInteractive() }
        }
    }
}
