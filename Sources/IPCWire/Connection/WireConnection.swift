#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// One side of a windowbroker connection: numbers requests, matches replies to them, and
/// fails every waiting request when the connection ends or a deadline passes. Broker, worker
/// SDK and control client all talk through this type.
package actor WireConnection {
    private struct Pending {
        var continuation: CheckedContinuation<Envelope, any Error>
        var deadline: Scheduled<Void>
    }

    private let outbound: NIOAsyncChannelOutboundWriter<Envelope>
    /// The channel itself: requests are written to it directly and their deadlines are timers
    /// of its event loop, so a request costs no task of its own.
    private let channel: any Channel
    private var nextID: UInt64 = 1
    private var pending: [UInt64: Pending] = [:]
    private var closedError: BrokerError?

    /// A connection over a framed channel, writing through `outbound`.
    package init(_ wire: WireChannel, outbound: NIOAsyncChannelOutboundWriter<Envelope>) {
        self.outbound = outbound
        self.channel = wire.channel
    }

    /// Sends `body` as a request and waits for the envelope that names it in `reply_to`.
    /// An `Error` reply is thrown as `BrokerError`.
    package func request(_ body: Envelope.OneOf_Body, timeout: Duration, what peer: String = "the peer") async throws -> Envelope {
        if let closedError { throw closedError }
        let id = nextID
        nextID += 1
        let envelope = Envelope.with {
            $0.id = id
            $0.body = body
        }
        let channel = self.channel
        let reply = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Envelope, any Error>) in
            let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(timeout.nanoseconds)) { [weak self] in
                // Rare (a deadline passed), so the hop back onto the connection may cost a task.
                Task { await self?.fail(id, BrokerError(.timedOut, "\(peer) did not answer within \(timeout.formattedSeconds)")) }
                return ()
            }
            pending[id] = Pending(continuation: continuation, deadline: deadline)
            // Straight into the pipeline: replies are matched by id, so this write needs no
            // ordering against the async writer's.
            channel.writeAndFlush(envelope).whenFailure { [weak self] error in
                // A frame refused by the codec (too large) fails this request now. A broken
                // socket is the read side's to report: the peer may have said why it closed
                // (an Error frame) just before, and that reason is what the caller should see.
                guard let refused = error as? BrokerError else { return }
                Task { await self?.fail(id, refused) }
            }
        }
        if case .error(let error) = reply.body { throw BrokerError(wire: error) }
        return reply
    }

    /// Sends an envelope that expects no answer (a reply, or a pushed event). It touches no
    /// state of the connection, so replies go straight to the channel without an actor hop,
    /// and it returns once the frame is written (or refused).
    package nonisolated func send(_ body: Envelope.OneOf_Body, replyTo: UInt64 = 0) async throws {
        var envelope = Envelope()
        envelope.replyTo = replyTo
        envelope.body = body
        // Through the pipeline with a promise, not the async writer (whose write returns once
        // queued): a frame the codec refuses (too large) must fail here, so it can be answered.
        do { try await channel.writeAndFlush(envelope).get() } catch { throw Self.mapWriteError(error) }
    }

    /// Answers `request`. A reply too large for a frame is answered with that error instead:
    /// every request gets exactly one answer.
    package nonisolated func reply(to request: Envelope, with body: Envelope.OneOf_Body) async {
        do {
            try await send(body, replyTo: request.id)
        } catch let error as BrokerError where error.code == .payloadTooLarge {
            try? await send(.error(BrokerError(.payloadTooLarge, "the reply would exceed the frame limit: \(error.message)").wire), replyTo: request.id)
        } catch {}
    }

    /// Answers `request`, closing the connection when the answer is not written within
    /// `timeout`: a peer that sends requests and never reads their answers is dropped instead
    /// of holding a reply, and the memory it takes, for ever. Returns false when it was closed.
    package nonisolated func reply(to request: Envelope, with body: Envelope.OneOf_Body, within timeout: Duration) async -> Bool {
        let channel = self.channel
        let closer = channel.eventLoop.scheduleTask(in: .nanoseconds(timeout.nanoseconds)) {
            channel.close(promise: nil)
        }
        await reply(to: request, with: body)
        closer.cancel()
        return channel.isActive
    }

    /// Answers a request with an `Error` frame.
    package nonisolated func reply(to request: Envelope, error: BrokerError) async {
        try? await send(.error(error.wire), replyTo: request.id)
    }

    /// Hands a received envelope to the request waiting for it. Returns false when nothing
    /// waits for it, so the caller treats it as a request or event.
    package func deliver(_ envelope: Envelope) -> Bool {
        guard envelope.replyTo != 0, let waiting = pending.removeValue(forKey: envelope.replyTo) else { return false }
        waiting.deadline.cancel()
        waiting.continuation.resume(returning: envelope)
        return true
    }

    /// Marks the connection closed, fails everything still waiting and finishes the writer.
    public func close(_ error: BrokerError) {
        failPending(error)
        outbound.finish()
    }

    /// Fails everything still waiting; later requests fail at once. Replies can still be sent.
    public func failPending(_ error: BrokerError) {
        if closedError == nil { closedError = error }
        let waiting = pending
        pending.removeAll()
        for (_, entry) in waiting {
            entry.deadline.cancel()
            entry.continuation.resume(throwing: error)
        }
    }

    private func fail(_ id: UInt64, _ error: BrokerError) {
        guard let waiting = pending.removeValue(forKey: id) else { return }
        waiting.deadline.cancel()
        waiting.continuation.resume(throwing: error)
    }

    private static func mapWriteError(_ error: any Error) -> BrokerError {
        if let error = error as? BrokerError { return error }
        return BrokerError(.connectionClosed, "the connection closed: \(error)")
    }

    /// Reads `inbound` until it ends, routing replies to their requests and everything else to
    /// `handle`. Returns the error that ended the connection, if any, after failing all waiters
    /// (the writer stays open so the caller can still say why it is closing).
    @discardableResult
    package nonisolated func readLoop(
        _ inbound: NIOAsyncChannelInboundStream<Envelope>,
        handle: @Sendable (Envelope) async -> Void
    ) async -> BrokerError? {
        var ending: BrokerError?
        do {
            for try await envelope in inbound {
                if await deliver(envelope) { continue }
                await handle(envelope)
            }
        } catch let error as BrokerError {
            ending = error
        } catch {
            ending = BrokerError(.connectionClosed, "the connection failed: \(error)")
        }
        await failPending(ending ?? BrokerError(.connectionClosed, "the peer closed the connection"))
        return ending
    }
}

extension Duration {
    var nanoseconds: Int64 {
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
