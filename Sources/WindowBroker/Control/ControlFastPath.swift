import IPCWire
import NIOCore
import Synchronization

/// Whether a control connection has said a valid Hello: set by the request handler, read by
/// the handshake deadline on the event loop.
final class ControlHandshake: Sendable {
    private let done = Atomic<Bool>(false)
    var isDone: Bool { done.load(ordering: .acquiring) }
    func complete() { done.store(true, ordering: .releasing) }
}

/// Takes a control connection's requests on the event loop that reads them, in the pipeline,
/// before NIO's async channel sees them. A ping needs no broker state and is answered right
/// here: no task, no actor, no thread hop. Any other request (a watch aside) is answered by a
/// task of its own started here, and its reply written from here: NIO's async channel, its
/// state machines and the connection's reading task were about 100 µs of an open's path on
/// cold caches. What is read while a request is answered here, until its reply is written,
/// waits its turn, so replies keep request order and a peer that reads no replies holds one;
/// it then goes on as if just read (a request taken here again, or passed on).
/// The async side (`ControlRequestHandler.serve`) takes the Hello, a watch and anything
/// malformed; while it owes a reply, everything goes to it, in order.
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
    /// The Welcome went out: what is read from now on may be answered here (a request read
    /// before it is the async side's, which answers it after the Welcome).
    private var welcomed = false
    /// Who answers the requests taken here and the connection their replies go out on, once
    /// the connection is admitted (`attach`).
    private var answerer: (handler: ControlRequestHandler, connection: WireConnection)?
    /// A request taken here is being answered.
    private var answering = false
    /// What was read (or happened) meanwhile, in order.
    private var waiting: [Waiting] = []
    private var paused = false
    private var removed = false
    /// Reads passed on to the async side so far.
    private var passedOn = 0

    private enum Waiting {
        case read(NIOAny)
        case error(any Error)
        case inactive
    }

    /// Past this many waiting, the connection is read no further until they are taken.
    static let waitingLimit = 16

    init(handshake: ControlHandshake, timeout: Duration) {
        self.handshake = handshake
        handshakeTimeout = timeout
    }

    /// From now on, requests are answered here (on the event loop).
    func attach(_ handler: ControlRequestHandler, connection: WireConnection) {
        answerer = (handler, connection)
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
    /// A request still answered here then finds nobody to write to; what waited behind it is
    /// not started (its peer is gone, and none of it was answered).
    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        removed = true
        waiting.removeAll()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answering, waiting.isEmpty else {
            wait(.read(data), context: context)
            return
        }
        take(data, context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !answering, waiting.isEmpty else { return wait(.error(error), context: context) }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        guard !answering, waiting.isEmpty else { return wait(.inactive, context: context) }
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Every request is answered once with its id in reply_to; pushed events carry none.
        // The Welcome answers the Hello, whose id may be 0.
        let envelope = unwrapOutboundIn(data)
        if case .welcome = envelope.body {
            welcomed = true
            if owed > 0 { owed -= 1 }
        } else if envelope.replyTo != 0, owed > 0 {
            owed -= 1
        }
        context.write(data, promise: promise)
    }

    private func wait(_ item: Waiting, context: ChannelHandlerContext) {
        waiting.append(item)
        if waiting.count >= Self.waitingLimit, !paused {
            paused = true
            context.channel.setReading(false)
        }
    }

    /// A request read in its turn: answered here, or passed on to the async side.
    private func take(_ data: NIOAny, context: ChannelHandlerContext) {
        let envelope = unwrapInboundIn(data)
        guard owed == 0, welcomed, case .controlRequest(let request) = envelope.body, let kind = request.kind else {
            return passOn(data, context: context)
        }
        if case .ping(let ping) = kind {
            var reply = Envelope()
            reply.replyTo = envelope.id
            reply.body = .controlReply(.with { $0.ping = .with { $0.payload = ping.payload } })
            context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
            return
        }
        guard let answerer else { return passOn(data, context: context) }
        if case .watch = kind { return passOn(data, context: context) }
        answering = true
        let (handler, connection) = answerer
        let loop = context.eventLoop
        let (lane, bound) = (NIOLoopBound(self, eventLoop: loop), NIOLoopBound(context, eventLoop: loop))
        let id = envelope.id
        Task {
            let answer = await handler.answerAsConnection(kind)
            // What waited meanwhile is taken once the reply is written, not before: a peer that
            // sends requests and reads no answers holds one answer, not all of them. (The reply
            // passes through `write` below while nothing is owed, so it pays no debt.)
            connection.reply(toID: id, with: answer, within: handler.broker.configuration.replyWriteTimeout) { open in
                if !open { handler.closedUnread() }
                lane.value.answered(context: bound.value)
            }
        }
    }

    private func passOn(_ data: NIOAny, context: ChannelHandlerContext) {
        // Everything before the Welcome is answered (the Hello by the Welcome, whatever its id);
        // after it, requests are, which carry an id (a frame without one is not a request).
        if !welcomed || unwrapInboundIn(data).id != 0 { owed += 1 }
        passedOn &+= 1
        context.fireChannelRead(data)
    }

    /// The reply to the request answered here is written (or the connection closed): what
    /// waited meanwhile is taken, in order, until a request is answered here again.
    private func answered(context: ChannelHandlerContext) {
        answering = false
        takeWaiting(context: context)
    }

    private func takeWaiting(context: ChannelHandlerContext) {
        let passedBefore = passedOn
        while !answering, !removed, !waiting.isEmpty {
            switch waiting.removeFirst() {
            case .read(let data): take(data, context: context)
            case .error(let error): context.fireErrorCaught(error)
            case .inactive: context.fireChannelInactive()
            }
        }
        // NIO's async channel hands reads to its reader at the end of a read: these came
        // after the socket's own.
        if passedOn != passedBefore, !removed { context.fireChannelReadComplete() }
        if paused, waiting.count < Self.waitingLimit, !removed {
            paused = false
            context.channel.setReading(true)
        }
    }
}
