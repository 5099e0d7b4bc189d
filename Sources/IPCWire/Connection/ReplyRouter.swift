import NIOCore

/// A reply and its place among the frames read: `framesBefore` frames that were not replies
/// (requests, events) were read on the connection before it, and passed on to the reader.
package struct WireAnswer: Sendable {
    package var envelope: Envelope
    package var framesBefore: UInt64

    /// The reply, or the peer's refusal (an `Error` reply) thrown as `BrokerError`.
    package func accepted() throws(BrokerError) -> Envelope {
        if case .error(let error) = envelope.body { throw BrokerError(wire: error) }
        return envelope
    }
}

/// Matches replies to the requests waiting for them, in the pipeline, on the connection's
/// event loop: a reply completes its request as soon as it is decoded, without going through
/// the async reader, a task or an actor first (each of those is a job of its own per reply).
/// Everything else (requests, events, a reply nothing waits for any more) goes on to the
/// async side, or to the owner's own on-loop delivery when it set one. Confined to the event
/// loop, as every channel handler.
final class ReplyRouter: ChannelInboundHandler {
    typealias InboundIn = Envelope
    typealias InboundOut = Envelope

    /// How a request hears its answer: called once, on the event loop, with the envelope that
    /// names it or the reason there will be none. A closure, not a promise: a promise is a
    /// future, its callback list and generic code run for every request (`callgrind`: 9,300
    /// of the 68,700 instructions a `wmctl ping` executed per round trip).
    typealias Completion = @Sendable (Result<WireAnswer, BrokerError>) -> Void

    private struct Waiting {
        let complete: Completion
        let deadline: NIODeadline
        let timeout: Duration
        let peer: String
    }

    private var nextID: UInt64 = 1
    private var waiting: [UInt64: Waiting] = [:]
    /// One timer for all the requests waiting, due at the earliest deadline among them when it
    /// was set (an answered request leaves it as it is). A timer per request was a scheduled
    /// task, a promise and a closure made and cancelled for every request: 5% of the broker's
    /// time in a post to 100 scenes (`perf`), where each scene's acknowledgement comes long
    /// before its deadline.
    private var sweep: (due: NIODeadline, timer: Scheduled<Void>)?
    /// Why the connection ended, once it did: later requests fail with it at once.
    private var closed: BrokerError?
    /// Where requests and events go instead of the async reader: see `WireConnection.deliverOnLoop`.
    var delivery: ((Envelope) -> Void)?
    /// Frames passed on so far (everything that was not a reply), numbered in the order read:
    /// a reply says how many came before it (`WireAnswer.framesBefore`).
    private var passedOn: UInt64 = 0

    /// Numbers `body` as a request, writes it, and calls `complete` with the envelope that
    /// names it in `reply_to` (an `Error` reply included), or with why not: the deadline
    /// passed, the frame was refused (too large), or the connection ended (with its reason).
    /// Unless `flush`, the frame waits in the channel for the next flush.
    func send(_ body: RequestBody, on channel: any Channel, timeout: Duration, peer: String, flush: Bool = true, complete: @escaping Completion) {
        if let closed {
            complete(.failure(closed))
            return
        }
        let id = nextID
        nextID += 1
        let envelope = body.envelope(id: id)
        let loop = channel.eventLoop
        let deadline = loop.now + .nanoseconds(timeout.nanoseconds)
        waiting[id] = Waiting(complete: complete, deadline: deadline, timeout: timeout, peer: peer)
        sweep(by: deadline, on: loop)
        // Straight into the pipeline from its tail: replies are matched by id, so this write
        // needs no ordering against the async writer's. No promise: a frame the codec refuses
        // (too large) comes back as `RefusedRequest`, which fails this request now. A broken
        // socket is the read side's to report: the peer may have said why it closed (an Error
        // frame) just before, and that reason is what the caller should see.
        if flush {
            channel.writeAndFlush(envelope: envelope, promise: nil)
        } else {
            channel.write(envelope: envelope, promise: nil)
        }
    }

    /// Makes sure the timer goes off by `deadline`.
    private func sweep(by deadline: NIODeadline, on loop: any EventLoop) {
        if let sweep {
            if sweep.due <= deadline { return }
            sweep.timer.cancel()
        }
        let timer = loop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            sweep = nil
            failOverdue(on: loop)
        }
        sweep = (deadline, timer)
    }

    /// The timer went off: what is past its deadline fails, in the order it was sent, and the
    /// timer is set again for the earliest deadline left.
    private func failOverdue(on loop: any EventLoop) {
        let now = loop.now
        var overdue: [UInt64] = []
        var next: NIODeadline?
        for (id, entry) in waiting {
            if entry.deadline <= now {
                overdue.append(id)
            } else if next.map({ entry.deadline < $0 }) ?? true {
                next = entry.deadline
            }
        }
        for id in overdue.sorted() {
            guard let entry = waiting.removeValue(forKey: id) else { continue }
            entry.complete(.failure(BrokerError(.timedOut, "\(entry.peer) did not answer within \(entry.timeout.formattedSeconds)")))
        }
        if let next { sweep(by: next, on: loop) }
    }

    /// Fails everything waiting; later requests fail at once with the first reason given.
    func failAll(_ error: BrokerError) {
        if closed == nil { closed = error }
        sweep?.timer.cancel()
        sweep = nil
        let ended = waiting
        waiting.removeAll()
        for (_, entry) in ended {
            entry.complete(.failure(error))
        }
    }

    private func fail(_ id: UInt64, _ error: BrokerError) {
        waiting.removeValue(forKey: id)?.complete(.failure(error))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let refused = event as? RefusedRequest {
            fail(refused.id, refused.error)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        if envelope.replyTo != 0, let entry = waiting.removeValue(forKey: envelope.replyTo) {
            entry.complete(.success(WireAnswer(envelope: envelope, framesBefore: passedOn)))
            return
        }
        // An Error frame that answers nothing is the peer saying why it is closing: what waits
        // fails with that reason, not with the bare end of the connection that follows.
        if envelope.replyTo == 0, case .error(let error) = envelope.body {
            failAll(BrokerError(wire: error))
        }
        passedOn += 1
        if let delivery {
            delivery(envelope)
            return
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(error as? BrokerError ?? BrokerError(.connectionClosed, "the connection failed: \(error)"))
        context.fireErrorCaught(error)
        // With frames delivered on the loop no reader ends the connection when it fails (a
        // frame that does not decode): the router does, as the reader's end would.
        if delivery != nil { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(BrokerError(.connectionClosed, "the peer closed the connection"))
        context.fireChannelInactive()
    }
}

/// A request the codec refused to write (its frame would exceed the limit), sent from the
/// codec to the router as an inbound event: requests are written without a promise.
struct RefusedRequest {
    let id: UInt64
    let error: BrokerError
}
