@testable import IPCWire
import SwiftProtobuf
import XCTest

/// A body encoded once and sent to many peers reads, at each of them, as the same envelope
/// encoded whole would: its id, its body, nothing left unknown.
final class PreparedBodyTests: XCTestCase {
    func testAnEnvelopeWithAPreparedBodyDecodesAsTheWholeEnvelope() throws {
        let delivery = Windowbroker_V1_UpdateDelivery.with {
            $0.sequence = 42
            $0.event = .with {
                $0.name = "noteChanged"
                $0.payload = PlistValue.wire(dictionary: ["noteID": .string("groceries"), "revision": .integer(3)])
                $0.postedBy = "a-session"
            }
        }
        let body = Envelope.OneOf_Body.workerCommand(.with { $0.update = delivery })
        let prepared = try PreparedBody(body)
        for id: UInt64 in [1, 7, 1 << 40] {
            let sent: [UInt8] = try RequestBody.prepared(prepared).envelope(id: id).serializedBytes()
            let read = try Envelope(serializedBytes: sent)
            var whole = Envelope()
            whole.id = id
            whole.body = body
            XCTAssertEqual(read, whole)
            XCTAssertTrue(read.unknownFields.data.isEmpty, "the peer knows every field it read")
            let wholeBytes: [UInt8] = try whole.serializedBytes()
            XCTAssertEqual(sent.count, wholeBytes.count)
        }
    }
}
