import Glibc
import NIOCore
import NIOPosix

/// The zygote's answer to one fork request (`wb_zygote_request`), read on an event loop: the
/// child's pid, or why there is none. The zygote answers right after its `clone`, while the
/// child starts. Waited for on a pool thread (`OffLoop`), the answer came as late as that
/// thread was woken and scheduled, and with it the registration of the child's socket: the
/// child's Hello then sat unread.
enum ZygoteAnswer {
    /// 0 and the pid, or an errno value: ETIMEDOUT after `timeout`, EPIPE when the zygote
    /// closed the request without answering; nil when the answer cannot be waited for. Takes
    /// `fd` over and closes it.
    static func read(from fd: Int32, timeout: TimeAmount) async -> (errno: Int32, pid: pid_t)? {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        let answer = loop.makePromise(of: (errno: Int32, pid: pid_t).self)
        let channel: any Channel
        do {
            channel = try await NIOPipeBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(Reader(answer, timeout: timeout))
                    }
                }
                .takingOwnershipOfDescriptor(input: fd)
                .get()
        } catch {
            // The channel could not be made (not seen: the broker's loops never stop). The
            // descriptor is not closed here: NIO has closed it with the channel, or handed it
            // back, and which one it did is not told; closing a number another thread may
            // have been given since would be worse than keeping one descriptor. The promise is
            // completed all the same (NIO's debug builds trap on one left behind).
            answer.succeed((ECANCELED, 0))
            return nil
        }
        let result = (try? await answer.futureResult.get()) ?? (EPIPE, 0)
        channel.close(promise: nil)
        return result
    }

    /// Completes the answer once: with the first record read, at the end of the stream, or
    /// when the deadline passes.
    private final class Reader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private let answer: EventLoopPromise<(errno: Int32, pid: pid_t)>
        private let timeout: TimeAmount
        private var deadline: Scheduled<Void>?
        private var done = false

        init(_ answer: EventLoopPromise<(errno: Int32, pid: pid_t)>, timeout: TimeAmount) {
            self.answer = answer
            self.timeout = timeout
        }

        func handlerAdded(context: ChannelHandlerContext) {
            let bound = NIOLoopBound((reader: self, context: context), eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: timeout) { bound.value.reader.finish(ETIMEDOUT, 0, bound.value.context) }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var record = unwrapInboundIn(data)
            // One record of a native Int32: the pid, or a negated errno.
            guard record.readableBytes == 4, let value = record.readInteger(endianness: .host, as: Int32.self) else {
                return finish(EPIPE, 0, context)
            }
            value < 0 ? finish(-value, 0, context) : finish(0, value, context)
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(EPIPE, 0, context)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(EPIPE, 0, context)
        }

        private func finish(_ errno: Int32, _ pid: pid_t, _ context: ChannelHandlerContext) {
            guard !done else { return }
            done = true
            deadline?.cancel()
            answer.succeed((errno, pid))
            context.close(promise: nil)
        }
    }
}
