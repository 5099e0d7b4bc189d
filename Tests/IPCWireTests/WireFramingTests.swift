import IPCWire
import NIOCore
import NIOEmbedded
import XCTest

/// The wire framing on an `EmbeddedChannel`: the exact bytes, frames split or joined however
/// the socket delivers them, and the errors a bad peer gets, without a socket or a process.
final class WireFramingTests: XCTestCase {
    private func channel(maxFrameBytes: Int = WireProtocol.defaultMaxFrameBytes) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addWireFraming(maxFrameBytes: maxFrameBytes)
        return channel
    }

    private func ping(_ id: UInt64, _ payload: String = "x") -> Envelope {
        .with {
            $0.id = id
            $0.controlRequest = .with { $0.ping = .with { $0.payload = Data(payload.utf8) } }
        }
    }

    /// Everything written, as one byte string.
    private func written(_ channel: EmbeddedChannel) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += Array(buffer.readableBytesView) }
        return bytes
    }

    func testAFrameIsAFourByteBigEndianLengthThenTheEnvelope() throws {
        let channel = try channel()
        let envelope = ping(7)
        try channel.writeOutbound(envelope)
        let body: [UInt8] = try envelope.serializedBytes()
        let count = UInt32(body.count)
        XCTAssertEqual(try written(channel), [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)] + body)
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testFramesSplitAndJoinedAnyHowAreReadWhole() throws {
        let sender = try channel()
        for id in 1...3 { try sender.writeOutbound(ping(UInt64(id), String(repeating: "p", count: id * 100))) }
        let bytes = try written(sender)
        let receiver = try channel()
        // One byte at a time: nothing comes out before a frame is complete.
        for (index, byte) in bytes.enumerated() {
            try receiver.writeInbound(ByteBuffer(bytes: [byte]))
            if index < 4 { XCTAssertNil(try receiver.readInbound(as: Envelope.self)) }
        }
        var ids: [UInt64] = []
        while let envelope = try receiver.readInbound(as: Envelope.self) { ids.append(envelope.id) }
        XCTAssertEqual(ids, [1, 2, 3])
        // All three in one read.
        try receiver.writeInbound(ByteBuffer(bytes: bytes))
        ids = []
        while let envelope = try receiver.readInbound(as: Envelope.self) { ids.append(envelope.id) }
        XCTAssertEqual(ids, [1, 2, 3])
        XCTAssertTrue(try receiver.finish().isClean)
    }

    func testAHeaderAnnouncingMoreThanTheLimitIsRefusedBeforeTheBodyArrives() throws {
        let channel = try channel(maxFrameBytes: 1024)
        XCTAssertThrowsError(try channel.writeInbound(ByteBuffer(bytes: [0, 0, 0x04, 0x01]))) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .payloadTooLarge, "\(error)")
        }
        XCTAssertNil(try channel.readInbound(as: Envelope.self))
    }

    /// Issue 67 item 8: a connection that only listens may send small frames only, from the
    /// moment its limit is lowered (a watch).
    func testALoweredLimitRefusesALargerFrameAtItsHeader() throws {
        let limit = InboundFrameLimit(bytes: WireProtocol.defaultMaxFrameBytes)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addWireFraming(limit: limit)
        let small = try RawFrame.bytes(ping(1, String(repeating: "s", count: 20_000)))
        try channel.writeInbound(ByteBuffer(bytes: small))
        XCTAssertEqual(try channel.readInbound(as: Envelope.self)?.id, 1, "20 KB is fine before")
        limit.bytes = 16 << 10
        XCTAssertThrowsError(try channel.writeInbound(ByteBuffer(bytes: Array(small.prefix(4))))) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .payloadTooLarge, "\(error)")
        }
    }

    /// Issue 67 item 8: the unfinished large frames of all connections share one budget.
    /// Before: each of 600 watchers could hold a 1 MiB - 1 partial frame (724 MiB held).
    func testUnfinishedLargeFramesOfAllConnectionsShareOneBudget() throws {
        let budget = PartialFrameBudget(limit: 3 << 19)  // 1.5 MiB
        func connection() throws -> EmbeddedChannel {
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addWireFraming(budget: budget)
            return channel
        }
        let frame = try RawFrame.bytes(ping(1, String(repeating: "b", count: 1 << 20 - 64)))
        let (first, second) = (try connection(), try connection())
        try first.writeInbound(ByteBuffer(bytes: Array(frame.prefix(1000))))
        XCTAssertEqual(budget.holding, frame.count - 4, "the first one's frame is held against the budget")
        XCTAssertThrowsError(try second.writeInbound(ByteBuffer(bytes: Array(frame.prefix(1000))))) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .resourceExhausted, "\(error)")
        }
        try first.writeInbound(ByteBuffer(bytes: Array(frame.dropFirst(1000))))
        XCTAssertEqual(try first.readInbound(as: Envelope.self)?.id, 1)
        XCTAssertEqual(budget.holding, 0, "given back once whole")
        let third = try connection()
        try third.writeInbound(ByteBuffer(bytes: Array(frame.prefix(1000))))
        _ = try? third.finish()
        XCTAssertEqual(budget.holding, 0, "given back when the connection goes")
    }

    func testAFrameThatIsNoEnvelopeIsAMalformedFrame() throws {
        let channel = try channel()
        // Field 1 as a length-delimited field claiming 100 bytes of which 2 follow.
        let garbage: [UInt8] = [0x0a, 100, 1, 2]
        XCTAssertThrowsError(try channel.writeInbound(ByteBuffer(bytes: [0, 0, 0, UInt8(garbage.count)] + garbage))) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .malformedFrame, "\(error)")
        }
    }

    func testAnEnvelopeTooLargeToSendFailsItsWriteAndSendsNothing() throws {
        let channel = try channel(maxFrameBytes: 64)
        let write = channel.writeAndFlush(ping(1, String(repeating: "y", count: 200)))
        XCTAssertThrowsError(try write.wait()) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .payloadTooLarge, "\(error)")
        }
        XCTAssertEqual(try written(channel), [])
        // The connection goes on: a small one still goes out.
        try channel.writeOutbound(ping(2))
        XCTAssertFalse(try written(channel).isEmpty)
    }
}

/// An envelope's bytes on the wire: the 4-byte length, then the envelope.
enum RawFrame {
    static func bytes(_ envelope: Envelope) throws -> [UInt8] {
        let body: [UInt8] = try envelope.serializedBytes()
        let count = UInt32(body.count)
        return [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)] + body
    }
}
