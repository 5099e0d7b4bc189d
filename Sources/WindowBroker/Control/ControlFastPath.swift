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
///
/// It also keeps the handshake's deadline, as a timer on the loop: a peer that says no Hello
/// in time is told so and closed. (A task per connection sleeping on Dispatch's timers did
/// this before, and cost every connection a task and a wake-up of Dispatch's timer thread.)
final class ControlFastPath: ChannelDuplexHandler {
    typealias InboundIn = Envelope
    typealias InboundOut = Envelope
    typealias OutboundIn = Envelope
    typealias OutboundOut = Envelope

    private let handshake: ControlHandshake
    private let handshakeTimeout: Duration
    private var deadline: Scheduled<Void>?
    /// Requests passed to the async side and not answered yet (event-loop confined).
    private var owed = 0

    init(handshake: ControlHandshake, timeout: Duration) {
        self.handshake = handshake
        handshakeTimeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(handshakeTimeout.nanoseconds)) { [self] in
            guard !handshake.isDone else { return }
            var envelope = Envelope()
            envelope.body = .error(BrokerError(.handshakeRequired, "no Hello within \(handshakeTimeout.formattedSeconds)").wire)
            context.writeAndFlush(wrapOutboundOut(envelope)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    /// Also how a closed connection's deadline goes: NIO removes every handler after a close.
    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
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
