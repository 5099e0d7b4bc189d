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
}
