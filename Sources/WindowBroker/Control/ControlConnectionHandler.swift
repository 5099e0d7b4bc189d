import CLinuxShim
import Foundation
import IPCWire
import Logging
import NIOCore

/// One control connection, in its pipeline on the event loop that reads it: the Hello
/// handshake with its deadline, then one request at a time, each answered exactly once, in
/// order. A ping is answered right here; anything else by a task of its own, whose reply is
/// written from here. What is read meanwhile waits its turn (past `waitingLimit` the socket is
/// not read), so a peer that reads no replies holds one. `watch` streams lifecycle events on
/// the same connection until it closes. The connection's state lives here, on its loop.
final class ControlConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = Envelope
    typealias OutboundOut = Envelope

    /// Past this many frames waiting, the connection is read no further until they are taken.
    static let waitingLimit = 16

    /// Answers the requests; it learns the scene the peer speaks as when the Hello is accepted.
    private var answerer: ControlRequestHandler
    private var greeted = false
    private let peer: wb_ucred?
    private var deadline: Scheduled<Void>?
    /// A frame is being handled (the Hello accepted, a request answered): what is read
    /// meanwhile waits, in order.
    private var busy = false
    private var waiting: [Waiting] = []
    private var paused = false
    private var removed = false
    private var watcher: (id: UUID, task: Task<Void, Never>)?

    private enum Waiting {
        case read(Envelope)
        case error(any Error)
    }

    init(answerer: ControlRequestHandler, peer: wb_ucred?) {
        self.answerer = answerer
        self.peer = peer
    }

    private var logger: Logger { answerer.logger }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { begin(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        begin(context: context)
        context.fireChannelActive()
    }

    /// The connection is up: a peer of another user is refused; the others have until the
    /// handshake's deadline to say Hello.
    private func begin(context: ChannelHandlerContext) {
        guard deadline == nil, !removed else { return }
        if let peer, peer.uid != getuid() {
            logger.warning("refused a control peer of another user", metadata: ["uid": "\(peer.uid)", "pid": "\(peer.pid)"])
            return close(context, saying: BrokerError(.permissionDenied, "this broker serves uid \(getuid()) only"))
        }
        let timeout = answerer.broker.configuration.handshakeTimeout
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(timeout.nanoseconds)) { [self] in
            guard !greeted else { return }
            close(context, saying: BrokerError(.handshakeRequired, "no Hello within \(timeout.formattedSeconds)"))
        }
    }

    /// Also how a closed connection ends here: NIO removes every handler after a close. A
    /// request still being answered then finds nobody to write to; what waited is dropped.
    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        removed = true
        waiting.removeAll()
        if let watcher {
            watcher.task.cancel()
            Task { [broker = answerer.broker] in await broker.unsubscribe(watcher.id) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard !busy, waiting.isEmpty else { return wait(.read(envelope), context: context) }
        take(envelope, context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !busy, waiting.isEmpty else { return wait(.error(error), context: context) }
        fail(error, context: context)
    }

    private func wait(_ item: Waiting, context: ChannelHandlerContext) {
        waiting.append(item)
        if waiting.count >= Self.waitingLimit, !paused {
            paused = true
            context.channel.setReading(false)
        }
    }

    /// A frame read in its turn.
    private func take(_ envelope: Envelope, context: ChannelHandlerContext) {
        guard greeted else { return greet(envelope, context: context) }
        guard case .controlRequest(let request) = envelope.body, let kind = request.kind else {
            return write(.error(BrokerError(.invalidRequest, "expected a control request").wire), to: envelope.id, context: context)
        }
        switch kind {
        case .ping(let ping):
            write(.controlReply(.with { $0.ping = .with { $0.payload = ping.payload } }), to: envelope.id, context: context)
        case .watch(let watch) where watcher == nil:
            startWatching(watch, request: envelope.id, context: context)
        default:
            answer(kind, request: envelope.id, context: context)
        }
    }

    /// The first frame: a valid Hello is welcomed once the scene its peer speaks as is known.
    private func greet(_ envelope: Envelope, context: ChannelHandlerContext) {
        guard case .hello(let hello) = envelope.body else {
            return close(context, saying: BrokerError(.handshakeRequired, "the first message must be Hello"), replyTo: envelope.id)
        }
        if let problem = ControlRequestHandler.check(hello) { return close(context, saying: problem, replyTo: envelope.id) }
        deadline?.cancel()
        busy = true
        let (broker, pid, helloID, loop) = (answerer.broker, peer?.pid, envelope.id, context.eventLoop)
        let (lane, bound) = bindings(context)
        Task {
            let requester = if let pid { await broker.scene(speakingFor: pid) } else { SessionID?.none }
            loop.execute {
                let handler = lane.value
                guard !handler.removed else { return }
                handler.answerer.requester = requester
                handler.greeted = true
                handler.write(.welcome(.current(brokerPID: getpid())), to: helloID, context: bound.value)
                handler.done(context: bound.value)
            }
        }
    }

    /// The handler and its context, for a task's result to come back to on the loop.
    private func bindings(_ context: ChannelHandlerContext) -> (NIOLoopBound<ControlConnectionHandler>, NIOLoopBound<ChannelHandlerContext>) {
        (NIOLoopBound(self, eventLoop: context.eventLoop), NIOLoopBound(context, eventLoop: context.eventLoop))
    }

    private func answer(_ kind: ControlRequest, request id: UInt64, context: ChannelHandlerContext) {
        busy = true
        let (lane, bound) = bindings(context)
        let (answerer, channel) = (answerer, context.channel)
        Task {
            let answer = await answerer.answerAsConnection(kind)
            // What waited meanwhile is taken once the reply is written, not before: a peer that
            // sends requests and reads no answers holds one answer, not all of them.
            channel.writeReply(answer, to: id, within: answerer.broker.configuration.replyWriteTimeout) { open in
                if !open { answerer.closedUnread() }
                lane.value.done(context: bound.value)
            }
        }
    }

    private func startWatching(_ watch: Windowbroker_V1_WatchRequest, request id: UInt64, context: ChannelHandlerContext) {
        busy = true
        let (lane, bound) = bindings(context)
        let (answerer, broker, channel) = (answerer, answerer.broker, context.channel)
        Task {
            let started: Result<(id: UUID, events: AsyncStream<EventRecord>, replayed: Int), BrokerError>
            do throws(BrokerError) { started = .success(try await answerer.startWatching(watch)) } catch { started = .failure(error) }
            channel.eventLoop.execute {
                let handler = lane.value
                if handler.removed, case .success(let subscribed) = started {
                    Task { await broker.unsubscribe(subscribed.id) }
                }
                guard !handler.removed else { return }
                switch started {
                case .failure(let error):
                    handler.write(.error(error.wire), to: id, context: bound.value)
                case .success(let (subscription, events, replayed)):
                    answerer.frameLimit?.bytes = broker.configuration.watcherFrameBytes
                    handler.write(.controlReply(.with { $0.watchStarted = .with { $0.recent = UInt32(replayed) } }), to: id, context: bound.value)
                    // Each event once the last is written: a watcher that reads slowly holds
                    // the broker's buffer of its events, not a queue of writes.
                    handler.watcher = (subscription, Task {
                        for await event in events {
                            do { try await channel.writeAndFlush(envelope: .reply(.lifecycleEvent(event.wire), to: 0)).value() } catch { break }
                        }
                    })
                }
                handler.done(context: bound.value)
            }
        }
    }

    /// The frame in hand is handled: what waited meanwhile is taken, in order, until one is
    /// handled by a task again.
    private func done(context: ChannelHandlerContext) {
        busy = false
        while !busy, !removed, !waiting.isEmpty {
            switch waiting.removeFirst() {
            case .read(let envelope): take(envelope, context: context)
            case .error(let error): fail(error, context: context)
            }
        }
        if paused, waiting.count < Self.waitingLimit, !removed {
            paused = false
            context.channel.setReading(true)
        }
    }

    /// The pipeline failed (a malformed or oversized frame): the peer is told why, if it
    /// still can be, and the connection closes; the broker serves everyone else.
    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        guard let error = error as? BrokerError else {
            logger.debug("control connection ended", metadata: ["error": "\(error)"])
            return context.close(promise: nil)
        }
        logger.notice("closing a misbehaving control connection", metadata: ["error": "\(error.message)"])
        close(context, saying: error)
    }

    private func write(_ body: Envelope.OneOf_Body, to id: UInt64, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(.reply(body, to: id)), promise: nil)
    }

    /// Says why, then closes (nothing more is read meanwhile).
    private func close(_ context: ChannelHandlerContext, saying why: BrokerError, replyTo id: UInt64 = 0) {
        waiting.removeAll()
        busy = true
        context.writeAndFlush(wrapOutboundOut(.reply(.error(why.wire), to: id))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
