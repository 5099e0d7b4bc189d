import NIOCore
import SwiftProtobuf
import Synchronization

/// A connection that carries windowbroker envelopes, as NIO's async bridge sees it.
package typealias WireChannel = NIOAsyncChannel<Envelope, Envelope>

extension ChannelPipeline.SynchronousOperations {
    /// Installs the framing every windowbroker connection uses: a 4-byte big-endian length,
    /// then one protobuf `Envelope`. Frames longer than `maxFrameBytes` are refused in both
    /// directions with `BrokerError.payloadTooLarge`; undecodable frames raise `malformedFrame`.
    /// With `delivery`, requests and events go to it on the event loop from the first frame
    /// read (`WireConnection.deliverOnLoop`, set before anything can be read).
    package func addWireFraming(
        maxFrameBytes: Int = WireProtocol.defaultMaxFrameBytes, limit: InboundFrameLimit? = nil, budget: PartialFrameBudget? = nil,
        delivery: (@Sendable (Envelope) -> Void)? = nil
    ) throws {
        // The header is checked first (a frame announcing more than the limit is refused at
        // once), and the handler's buffer cap bounds what a peer can make us hold.
        try addHandler(
            ByteToMessageHandler(
                CappedFrameDecoder(maxFrameBytes: maxFrameBytes, limit: limit, budget: budget),
                maximumBufferSize: maxFrameBytes + 4
            )
        )
        try addHandler(EnvelopeCodec(maxFrameBytes: maxFrameBytes))
        let router = ReplyRouter()
        router.delivery = delivery
        try addHandler(router)
    }
}

extension WireChannel {
    /// Installs the framing on `channel` and wraps it for async use. Call on the channel's event loop.
    package static func wrapping(
        _ channel: Channel, maxFrameBytes: Int = WireProtocol.defaultMaxFrameBytes, delivery: (@Sendable (Envelope) -> Void)? = nil
    ) throws -> WireChannel {
        try channel.pipeline.syncOperations.addWireFraming(maxFrameBytes: maxFrameBytes, delivery: delivery)
        return try WireChannel(wrappingChannelSynchronously: channel)
    }
}

/// Turns frames into envelopes and back, and gives framing errors their wire meaning.
final class EnvelopeCodec: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Envelope
    typealias OutboundIn = Envelope
    typealias OutboundOut = ByteBuffer

    private let maxFrameBytes: Int

    init(maxFrameBytes: Int) {
        self.maxFrameBytes = maxFrameBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        do {
            let envelope = try Envelope(serializedBytes: Array(frame.readableBytesView))
            context.fireChannelRead(wrapInboundOut(envelope))
        } catch {
            context.fireErrorCaught(BrokerError(.malformedFrame, "a \(frame.readableBytes)-byte frame is not a valid envelope"))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if error is ByteToMessageDecoderError.PayloadTooLargeError {
            context.fireErrorCaught(BrokerError(.payloadTooLarge, "a frame exceeds the \(maxFrameBytes)-byte limit"))
        } else {
            context.fireErrorCaught(error)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let envelope = unwrapOutboundIn(data)
        do {
            let bytes: [UInt8] = try envelope.serializedBytes()
            guard bytes.count <= maxFrameBytes else {
                let refusal = BrokerError(.payloadTooLarge, "a \(bytes.count)-byte \(envelope.id != 0 ? "request" : "reply") exceeds the \(maxFrameBytes)-byte frame limit")
                if let promise {
                    promise.fail(refusal)
                } else if envelope.id != 0 {
                    // A request is written without a promise: its router hears of the refusal.
                    context.fireUserInboundEventTriggered(RefusedRequest(id: envelope.id, error: refusal))
                }
                return
            }
            // The length goes in front of the envelope in the same buffer: one write of one
            // piece per frame, not a header and a body.
            var frame = context.channel.allocator.buffer(capacity: 4 + bytes.count)
            frame.writeInteger(UInt32(bytes.count), endianness: .big)
            frame.writeBytes(bytes)
            context.write(wrapOutboundOut(frame), promise: promise)
        } catch {
            promise?.fail(error)
        }
    }
}

/// The 4-byte big-endian length framing with its cap checked on the header. NIOExtras'
/// `LengthFieldBasedFrameDecoder` has no cap and consumes the header before the body arrives,
/// so a peer announcing 200 MB would only be refused once that much was buffered (or at a
/// deadline); this one leaves the reader index at the header until the whole frame is there.
final class CappedFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    private let maxFrameBytes: Int
    private let limit: InboundFrameLimit?
    private let budget: PartialFrameBudget?
    /// What the frame being received holds of `budget`.
    private var reserved = 0

    init(maxFrameBytes: Int, limit: InboundFrameLimit? = nil, budget: PartialFrameBudget? = nil) {
        self.maxFrameBytes = maxFrameBytes
        self.limit = limit
        self.budget = budget
    }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let announced = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else { return .needMoreData }
        let length = Int(announced)
        let cap = min(maxFrameBytes, limit?.bytes ?? .max)
        if length > cap {
            throw BrokerError(.payloadTooLarge, "a frame announces \(length) bytes; the limit is \(cap)")
        }
        guard buffer.readableBytes >= 4 + length else {
            // A large frame holds its share of the budget all connections share until it is whole.
            if let budget, reserved == 0, length > PartialFrameBudget.unaccounted {
                guard budget.reserve(length) else {
                    throw BrokerError(.resourceExhausted, "the broker holds \(budget.limit) bytes of unfinished frames from other connections; send this \(length)-byte frame again later")
                }
                reserved = length
            }
            return .needMoreData
        }
        buffer.moveReaderIndex(forwardBy: 4)
        release()
        context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: length)!))
        return .continue
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }

    func decoderRemoved(context: ChannelHandlerContext) {
        release()
    }

    private func release() {
        guard reserved > 0 else { return }
        budget?.release(reserved)
        reserved = 0
    }
}

/// A connection's own cap on the frames it may send, lowered once it only listens (a watch):
/// read and changed on the connection's event loop only.
package final class InboundFrameLimit: @unchecked Sendable {
    package var bytes: Int

    package init(bytes: Int) {
        self.bytes = bytes
    }
}

/// The bytes of unfinished large frames all connections together may make the broker hold: a
/// few hundred peers each sending the first half of a 1 MiB frame would otherwise hold
/// hundreds of MiB. Frames up to `unaccounted` bytes do not count.
package final class PartialFrameBudget: Sendable {
    package let limit: Int
    private let held = Atomic<Int>(0)
    package static let unaccounted = 64 << 10

    package init(limit: Int) {
        self.limit = limit
    }

    package var holding: Int { held.load(ordering: .relaxed) }

    func reserve(_ bytes: Int) -> Bool {
        let now = held.add(bytes, ordering: .relaxed).newValue
        guard now > limit else { return true }
        held.subtract(bytes, ordering: .relaxed)
        return false
    }

    func release(_ bytes: Int) {
        held.subtract(bytes, ordering: .relaxed)
    }
}
