import NIOCore

extension Channel {
    /// Writes and flushes `envelope` from the pipeline's tail, as `writeAndFlush` does, through
    /// the pipeline's inlinable entry. `Channel.writeAndFlush` is a protocol requirement, so it
    /// runs generic over the value's type, and wrapping the value in `NIOAny` there asks the
    /// runtime whether it is a `ByteBuffer`, a `FileRegion`, ... (dynamic casts: 1,200
    /// instructions a write in `callgrind`). Compiled here, the type is known and the casts go.
    package func writeAndFlush(envelope: Envelope, promise: EventLoopPromise<Void>?) {
        pipeline.writeAndFlush(envelope, promise: promise)
    }

    /// Writes `envelope` without flushing it, through the same inlinable entry: it goes out
    /// with the next flush, in one system call with whatever else was written before it.
    package func write(envelope: Envelope, promise: EventLoopPromise<Void>?) {
        pipeline.write(envelope, promise: promise)
    }

    /// `writeAndFlush(envelope:promise:)` with the write's future.
    package func writeAndFlush(envelope: Envelope) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        pipeline.writeAndFlush(envelope, promise: promise)
        return promise.futureResult
    }

    /// Writes the answer to request `id`, closing the connection when it is not written within
    /// `timeout`: a peer that sends requests and never reads their answers is dropped instead
    /// of holding a reply, and the memory it takes, for ever. One the codec refuses as too
    /// large is answered with that error instead: every request gets exactly one answer.
    /// `written` runs on the event loop once the answer is written (or the connection
    /// closed), with whether the connection is still open.
    package func writeReply(_ body: Envelope.OneOf_Body, to id: UInt64, within timeout: Duration, written: @escaping @Sendable (Bool) -> Void) {
        let channel = self
        let write = {
            let closer = channel.eventLoop.scheduleTask(in: .nanoseconds(timeout.nanoseconds)) { channel.close(promise: nil) }
            channel.writeReply(body, to: id) {
                closer.cancel()
                written(channel.isActive)
            }
        }
        if eventLoop.inEventLoop { write() } else { eventLoop.execute(write) }
    }

    /// Writes the answer to request `id`; one the codec refuses as too large is answered with
    /// that error instead. `written` runs once what went out is written (or failed).
    package func writeReply(_ body: Envelope.OneOf_Body, to id: UInt64, written: (@Sendable () -> Void)? = nil) {
        let channel = self
        writeAndFlush(envelope: .reply(body, to: id)).whenComplete { result in
            guard case .failure(let error as BrokerError) = result, error.code == .payloadTooLarge else {
                written?()
                return
            }
            channel.writeAndFlush(envelope: .reply(.refusal(tooLarge: error), to: id)).whenComplete { _ in written?() }
        }
    }
}

extension Envelope {
    /// An envelope that answers request `id` (0: one that answers nothing, an event).
    package static func reply(_ body: Envelope.OneOf_Body, to id: UInt64) -> Envelope {
        var envelope = Envelope()
        envelope.replyTo = id
        envelope.body = body
        return envelope
    }
}

extension Envelope.OneOf_Body {
    /// What answers a request whose reply the codec refused as too large.
    package static func refusal(tooLarge error: BrokerError) -> Envelope.OneOf_Body {
        .error(BrokerError(.payloadTooLarge, "the reply would exceed the frame limit: \(error.message)").wire)
    }
}
