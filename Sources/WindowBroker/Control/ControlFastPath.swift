import IPCWire
import NIOCore
import Synchronization

/// Whether a control connection has said a valid Hello: set by the request handler, read by
/// the handshake deadline and by the fast path on the event loop.
final class ControlHandshake: Sendable {
    private let done = Atomic<Bool>(false)
    var isDone: Bool { done.load(ordering: .acquiring) }
    func complete() { done.store(true, ordering: .releasing) }
}

/// Answers control requests that need no broker state (ping) right on the connection's event
/// loop, in the pipeline, before the async side sees them: no task, no actor, no thread hop.
/// Replies keep request order, so the fast path answers only when the async side owes no
/// reply on this connection; everything else, and everything before the Hello, passes through.
final class ControlFastPath: ChannelDuplexHandler {
    typealias InboundIn = Envelope
    typealias InboundOut = Envelope
    typealias OutboundIn = Envelope
    typealias OutboundOut = Envelope

    private let handshake: ControlHandshake
    /// Requests passed to the async side and not answered yet (event-loop confined).
    private var owed = 0

    init(handshake: ControlHandshake) {
        self.handshake = handshake
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard owed == 0, handshake.isDone, case .controlRequest(let request) = envelope.body, case .ping(let ping) = request.kind else {
            owed += 1
            context.fireChannelRead(data)
            return
        }
        var reply = Envelope()
        reply.replyTo = envelope.id
        reply.body = .controlReply(.with { $0.ping = .with { $0.payload = ping.payload } })
        context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Every request is answered once with its id in reply_to; pushed events carry none.
        if unwrapOutboundIn(data).replyTo != 0, owed > 0 { owed -= 1 }
        context.write(data, promise: promise)
    }
}
