import CLinuxShim
import Glibc
import NIOCore
import NIOPosix

/// The process's main thread as the event loop of the broker socket, running the main actor's
/// jobs as well.
///
/// On Linux the main actor is Dispatch's main queue, which `dispatch_main` hands to a pool
/// thread. With the socket on NIO's own thread, every command woke two threads: the loop's to
/// read it, the main queue's for the delegate, and the loop's again for the answer. Here the
/// main queue is bound to the main thread (as Foundation's run loop binds it), the main thread
/// becomes the event loop, and the loop drains the main queue whenever Dispatch signals its
/// eventfd: a command is read, handled and answered on one thread. Tasks that are not the main
/// actor's (an app's detached work) stay on Dispatch's pool, off the main thread.
enum MainThreadLoop {
    /// Turns the calling thread into that loop and starts `body` on the main actor; never
    /// returns. Returns at once, having changed nothing, when the caller is not the process's
    /// main thread, or when the kernel would not let the loop poll Dispatch's eventfd.
    @MainActor
    static func run(_ body: @escaping @MainActor (any EventLoop) async -> Void) {
        guard wb_is_main_thread() != 0 else { return }
        let mainQueue = wb_main_queue_eventfd()
        guard mainQueue >= 0 else { return }
        MultiThreadedEventLoopGroup.withCurrentThreadAsEventLoop { loop in
            NIOPipeBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MainQueueDrain())
                    }
                }
                .takingOwnershipOfDescriptor(input: mainQueue)
                .whenFailure { error in
                    // Nothing would ever run on the main actor: say why and stop.
                    PlainOutput.write("scene worker: cannot run the main queue on the main thread: \(error)\n", to: STDERR_FILENO)
                    exit(1)
                }
            // Queued on the main queue, which signals the eventfd: the first drain starts it.
            Task { @MainActor in await body(loop) }
        }
        // The loop runs until the process exits.
        fatalError("the main thread's event loop stopped")
    }
}

/// Runs the main queue's jobs each time Dispatch signals that it has some (the read consumes
/// the eventfd's count, so the next job signals again).
///
/// The zygote's exercise adds one too (`exercising`: it drains nothing and its channel may
/// close): adding a handler looks up the type's conformances to NIO's handler protocols, a scan
/// of every conformance record in the binary the first time, which each forked scene paid
/// before its Hello when the exercise used a handler of another type.
final class MainQueueDrain: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let exercising: Bool

    init(exercising: Bool = false) {
        self.exercising = exercising
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !exercising { wb_main_queue_drain() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        guard !exercising else { return }
        PlainOutput.write("scene worker: the main queue's eventfd closed\n", to: STDERR_FILENO)
        exit(1)
    }
}
