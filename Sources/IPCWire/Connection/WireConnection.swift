#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// One side of a windowbroker connection: sends requests and waits for their replies (which
/// the pipeline's `ReplyRouter` matches by id, with a deadline each), sends replies and events,
/// and reads what else arrives. Broker, worker SDK and control client all talk through it.
package final class WireConnection: Sendable {
    private let outbound: NIOAsyncChannelOutboundWriter<Envelope>
    /// The channel itself: requests are written to it directly, from its event loop.
    private let channel: any Channel
    /// The pipeline's router, found once on the event loop (it stays reachable, with the reason
    /// the connection ended, after the pipeline is torn down).
    private let router: NIOLoopBoundBox<ReplyRouter?>

    /// A connection over a framed channel, writing through `outbound`.
    package init(_ wire: WireChannel, outbound: NIOAsyncChannelOutboundWriter<Envelope>) {
        self.outbound = outbound
        let channel = wire.channel
        self.channel = channel
        router = NIOLoopBoundBox.makeEmptyBox(valueType: ReplyRouter.self, eventLoop: channel.eventLoop)
        let router = self.router
        if channel.eventLoop.inEventLoop {
            router.value = Self.findRouter(channel)
        } else {
            channel.eventLoop.execute { router.value = Self.findRouter(channel) }
        }
    }

    private static func findRouter(_ channel: any Channel) -> ReplyRouter? {
        try? channel.pipeline.syncOperations.handler(type: ReplyRouter.self)
    }

    /// The router; on the event loop only. Nil only when the channel closed before it was found.
    private var loopRouter: ReplyRouter? {
        if router.value == nil { router.value = Self.findRouter(channel) }
        return router.value
    }

    /// Runs `body` on the channel's event loop: at once when already there, else queued.
    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if channel.eventLoop.inEventLoop { body() } else { channel.eventLoop.execute(body) }
    }

    /// Hands every request and event to `body` on the event loop, as it is decoded, instead of
    /// to `readLoop`'s stream (which still reports how the connection ended). For a peer whose
    /// own code runs on the loop's thread (the SDK on the process's main thread), where going
    /// through the stream would be two jobs on other executors per frame.
    package func deliverOnLoop(_ body: @escaping @Sendable (Envelope) -> Void) {
        onLoop { [self] in loopRouter?.delivery = body }
    }

    /// Sends `body` as a request and waits for the envelope that names it in `reply_to`.
    /// An `Error` reply is thrown as `BrokerError`. It runs on the caller's executor, as do the
    /// other async methods here: called from the SDK's main actor it wakes no other thread.
    nonisolated(nonsending) package func request(_ body: Envelope.OneOf_Body, timeout: Duration, what peer: String = "the peer") async throws -> Envelope {
        try await answer(to: .body(body), timeout: timeout, what: peer).envelope
    }

    /// `request` with a body encoded once for many peers (`PreparedBody`).
    nonisolated(nonsending) package func request(_ body: PreparedBody, timeout: Duration, what peer: String = "the peer") async throws -> Envelope {
        try await answer(to: .prepared(body), timeout: timeout, what: peer).envelope
    }

    /// `request`, with the reply's place among the frames read (`WireAnswer.framesBefore`): for
    /// a caller that must not act on a reply before what the peer sent ahead of it.
    nonisolated(nonsending) package func answer(to body: Envelope.OneOf_Body, timeout: Duration, what peer: String = "the peer") async throws -> WireAnswer {
        try await answer(to: .body(body), timeout: timeout, what: peer)
    }

    nonisolated(nonsending) private func answer(to body: RequestBody, timeout: Duration, what peer: String) async throws -> WireAnswer {
        // The router resumes the caller itself: no promise and future between them.
        let answer = try await withUnsafeThrowingContinuation { continuation in
            issue(body, timeout: timeout, what: peer) { continuation.resume(with: $0) }
        }
        _ = try answer.accepted()
        return answer
    }

    /// Writes `body` as a request now (on the loop: at once; elsewhere: queued on the loop, in
    /// the order of this thread's writes) and returns the future of its answer. Unless `flush`,
    /// the frame goes out with the next flush (`flush()`, or a write that flushes).
    package func issue(_ body: Envelope.OneOf_Body, timeout: Duration, what peer: String = "the peer", flush: Bool = true) -> EventLoopFuture<WireAnswer> {
        let promise = channel.eventLoop.makePromise(of: WireAnswer.self)
        issue(.body(body), timeout: timeout, what: peer, flush: flush) { promise.completeWith($0.mapError { $0 }) }
        return promise.futureResult
    }

    /// Writes `body` as a request now (as `issue` does) and hands its reply to `complete` on
    /// the event loop, an `Error` reply as the failure: for a caller that takes answers as they
    /// come instead of waiting for each in a task of its own (the broker's update fan-out).
    package func issue(_ body: PreparedBody, timeout: Duration, what peer: String = "the peer", complete: @escaping @Sendable (Result<Envelope, BrokerError>) -> Void) {
        issue(.prepared(body), timeout: timeout, what: peer) { answer in
            complete(answer.flatMap { answer in Result { () throws(BrokerError) in try answer.accepted() } })
        }
    }

    /// `issue`, handing the answer to `complete` on the event loop.
    private func issue(_ body: RequestBody, timeout: Duration, what peer: String, flush: Bool = true, complete: @escaping ReplyRouter.Completion) {
        let channel = self.channel
        onLoop { [self] in
            guard let router = loopRouter else {
                complete(.failure(BrokerError(.connectionClosed, "the connection is closed")))
                return
            }
            router.send(body, on: channel, timeout: timeout, peer: peer, flush: flush, complete: complete)
        }
    }

    /// Stops reading the socket (on the event loop: at once) until `resumeReading`: a reader
    /// whose frames are delivered on the loop has no async reader to hold back.
    package func pauseReading() {
        let channel = self.channel
        onLoop { channel.setReading(false) }
    }

    /// Reads the socket again after `pauseReading`, if `allowed` still says so once on the
    /// event loop (a pause decided there in the meantime stands).
    package func resumeReading(if allowed: @escaping @Sendable () -> Bool) {
        let channel = self.channel
        onLoop {
            guard allowed() else { return }
            channel.setReading(true)
        }
    }

    /// Runs `body` on the channel's event loop: at once when already there, else queued.
    package func execute(_ body: @escaping @Sendable () -> Void) {
        onLoop(body)
    }

    /// Sends what was written without a flush (on the loop: at once; elsewhere: queued on the
    /// loop behind this thread's writes).
    package func flush() {
        let channel = self.channel
        onLoop { channel.flush() }
    }

    /// Sends an envelope that expects no answer (a reply, or a pushed event). It touches no
    /// state of the connection, so replies go straight to the channel without an actor hop,
    /// and it returns once the frame is written (or refused).
    nonisolated(nonsending) package func send(_ body: Envelope.OneOf_Body, replyTo: UInt64 = 0) async throws {
        let envelope = Envelope.reply(body, to: replyTo)
        // Through the pipeline with a promise, not the async writer (whose write returns once
        // queued): a frame the codec refuses (too large) must fail here, so it can be answered.
        do { try await channel.writeAndFlush(envelope: envelope).value() } catch { throw Self.mapWriteError(error) }
    }

    /// Answers `request`. A reply too large for a frame is answered with that error instead:
    /// every request gets exactly one answer.
    nonisolated(nonsending) package func reply(to request: Envelope, with body: Envelope.OneOf_Body) async {
        do {
            try await send(body, replyTo: request.id)
        } catch let error as BrokerError where error.code == .payloadTooLarge {
            try? await send(.refusal(tooLarge: error), replyTo: request.id)
        } catch {}
    }

    /// Answers `request` without waiting for the write, for a caller on another executor (the
    /// SDK's main actor), which would otherwise be woken once more only to learn that the write
    /// is done. Writes from one thread keep their order. A reply too large for a frame is
    /// answered with that error instead, as `reply(to:with:)` does.
    package func replyInBackground(to request: Envelope, with body: Envelope.OneOf_Body) {
        channel.writeReply(body, to: request.id)
    }

    /// `replyInBackground` with an answer encoded once for every request it answers (a scene's
    /// acknowledgement of an update): small by construction, so never refused as too large.
    package func replyInBackground(to request: Envelope, with prepared: PreparedBody) {
        channel.writeAndFlush(envelope: prepared.envelope(replyTo: request.id), promise: nil)
    }

    /// Answers a request with an `Error` frame.
    nonisolated(nonsending) package func reply(to request: Envelope, error: BrokerError) async {
        try? await send(.error(error.wire), replyTo: request.id)
    }

    /// Fails everything still waiting and finishes the writer.
    nonisolated(nonsending) package func close(_ error: BrokerError) async {
        await failPending(error)
        outbound.finish()
    }

    /// Fails everything still waiting; later requests fail at once. Replies can still be sent.
    nonisolated(nonsending) package func failPending(_ error: BrokerError) async {
        try? await channel.eventLoop.submit { [self] in loopRouter?.failAll(error) }.value()
    }

    private static func mapWriteError(_ error: any Error) -> BrokerError {
        if let error = error as? BrokerError { return error }
        return BrokerError(.connectionClosed, "the connection closed: \(error)")
    }

    /// Reads `inbound` until it ends, handing everything that is not a reply to `handle`.
    /// Returns the error that ended the connection, if any, after failing all waiters (the
    /// writer stays open so the caller can still say why it is closing).
    @discardableResult
    nonisolated(nonsending) package func readLoop(
        _ inbound: NIOAsyncChannelInboundStream<Envelope>,
        handle: @Sendable (Envelope) async -> Void
    ) async -> BrokerError? {
        var ending: BrokerError?
        do {
            // Replies never come this way: the pipeline's router completed their requests.
            for try await envelope in inbound {
                await handle(envelope)
            }
        } catch let error as BrokerError {
            ending = error
        } catch is CancellationError {
            // Our own side stopped reading (a client done with its connection): nothing to
            // describe (describing the error cost nine conformance scans at every client's end).
            ending = BrokerError(.connectionClosed, "the connection was closed by this side")
        } catch {
            ending = BrokerError(.connectionClosed, "the connection failed: \(error)")
        }
        await failPending(ending ?? BrokerError(.connectionClosed, "the peer closed the connection"))
        return ending
    }
}

extension EventLoopFuture where Value: Sendable {
    /// The future's value, awaited on the caller's executor. NIO's `get()` is an ordinary
    /// nonisolated async function: awaited on the main actor, it first moves to the global
    /// executor, and the completion then wakes a pool thread before the main actor.
    nonisolated(nonsending) package func value() async throws -> Value {
        try await withUnsafeThrowingContinuation { continuation in
            whenComplete { continuation.resume(with: $0) }
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating (for NIO's `TimeAmount`).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }

    /// The duration as people read it in a message (`5 s`, `0.5 s`).
    public var formattedSeconds: String {
        let (seconds, attoseconds) = components
        let value = Double(seconds) + Double(attoseconds) / 1e18
        return value == value.rounded() ? "\(Int(value)) s" : String(printf: "%.1f s", value)
    }
}

extension Channel {
    /// Stops reading the socket, or reads it again (at once); on the event loop. How a reader
    /// that takes frames on the loop holds a peer back: its frames then wait in the peer's
    /// socket buffer, not in our memory.
    package func setReading(_ reading: Bool) {
        try? syncOptions?.setOption(ChannelOptions.autoRead, value: reading)
        if reading { read() }
    }
}
