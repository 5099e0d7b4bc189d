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

    private let broker: Broker
    private let logger: Logger
    private let connections: ControlConnections
    private let id: ControlConnections.ID
    private let peer: wb_ucred?
    private let frameLimit: InboundFrameLimit
    private let handshakeTimeout: Duration
    private var deadline: Scheduled<Void>?
    /// Answers the requests once the Hello is accepted (it knows the scene the peer speaks as).
    private var answerer: ControlRequestHandler?
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

    init(broker: Broker, logger: Logger, connections: ControlConnections, id: ControlConnections.ID, peer: wb_ucred?, frameLimit: InboundFrameLimit) {
        self.broker = broker
        self.logger = logger
        self.connections = connections
        self.id = id
        self.peer = peer
        self.frameLimit = frameLimit
        handshakeTimeout = broker.configuration.handshakeTimeout
    }

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
        let timeout = handshakeTimeout
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(timeout.nanoseconds)) { [self] in
            guard answerer == nil else { return }
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
            Task { [broker] in await broker.unsubscribe(watcher.id) }
        }
        let (connections, id) = (connections, id)
        Task { await connections.leave(id) }
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
        guard let answerer else { return greet(envelope, context: context) }
        guard case .controlRequest(let request) = envelope.body, let kind = request.kind else {
            return write(.error(BrokerError(.invalidRequest, "expected a control request").wire), to: envelope.id, context: context)
        }
        switch kind {
        case .ping(let ping):
            write(.controlReply(.with { $0.ping = .with { $0.payload = ping.payload } }), to: envelope.id, context: context)
        case .watch(let watch) where watcher == nil:
            startWatching(watch, request: envelope.id, answerer: answerer, context: context)
        default:
            answer(kind, request: envelope.id, answerer: answerer, context: context)
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
        let (broker, logger, connections, id, frameLimit) = (broker, logger, connections, id, frameLimit)
        let (pid, helloID) = (peer?.pid, envelope.id)
        let (lane, bound, loop) = (NIOLoopBound(self, eventLoop: context.eventLoop), NIOLoopBound(context, eventLoop: context.eventLoop), context.eventLoop)
        Task {
            var answerer = ControlRequestHandler(broker: broker, logger: logger, connections: connections, connectionID: id)
            answerer.frameLimit = frameLimit
            if let pid { answerer.requester = await broker.scene(speakingFor: pid) }
            loop.execute {
                guard !lane.value.removed else { return }
                lane.value.answerer = answerer
                lane.value.write(.welcome(.current(brokerPID: getpid())), to: helloID, context: bound.value)
                lane.value.done(context: bound.value)
            }
        }
    }

    private func answer(_ kind: ControlRequest, request id: UInt64, answerer: ControlRequestHandler, context: ChannelHandlerContext) {
        busy = true
        let (lane, bound) = (NIOLoopBound(self, eventLoop: context.eventLoop), NIOLoopBound(context, eventLoop: context.eventLoop))
        let channel = context.channel
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

    private func startWatching(_ watch: Windowbroker_V1_WatchRequest, request id: UInt64, answerer: ControlRequestHandler, context: ChannelHandlerContext) {
        busy = true
        let (lane, bound) = (NIOLoopBound(self, eventLoop: context.eventLoop), NIOLoopBound(context, eventLoop: context.eventLoop))
        let (broker, channel, frameLimit) = (broker, context.channel, frameLimit)
        Task {
            let started: Result<(UUID, AsyncStream<EventRecord>), BrokerError>
            do throws(BrokerError) { started = .success(try await answerer.startWatching(watch)) } catch { started = .failure(error) }
            channel.eventLoop.execute {
                let handler = lane.value
                if handler.removed, case .success(let (subscription, _)) = started {
                    Task { await broker.unsubscribe(subscription) }
                }
                guard !handler.removed else { return }
                switch started {
                case .failure(let error):
                    handler.write(.error(error.wire), to: id, context: bound.value)
                case .success(let (subscription, events)):
                    frameLimit.bytes = broker.configuration.watcherFrameBytes
                    handler.write(.controlReply(.with { $0.watchStarted = .init() }), to: id, context: bound.value)
                    // Each event once the last is written: a watcher that reads slowly holds
                    // the broker's buffer of its events, not a queue of writes.
                    handler.watcher = (subscription, Task {
                        for await event in events {
                            var envelope = Envelope()
                            envelope.body = .lifecycleEvent(event.wire)
                            do { try await channel.writeAndFlush(envelope: envelope).value() } catch { break }
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
        var envelope = Envelope()
        envelope.replyTo = id
        envelope.body = body
        context.writeAndFlush(wrapOutboundOut(envelope), promise: nil)
    }

    /// Says why, then closes (nothing more is read meanwhile).
    private func close(_ context: ChannelHandlerContext, saying why: BrokerError, replyTo id: UInt64 = 0) {
        waiting.removeAll()
        busy = true
        var envelope = Envelope()
        envelope.replyTo = id
        envelope.body = .error(why.wire)
        context.writeAndFlush(wrapOutboundOut(envelope)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
