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
