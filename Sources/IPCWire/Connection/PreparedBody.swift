import SwiftProtobuf

/// A body encoded once, for the same request sent to many peers (an update posted to every
/// scene of an app) or the same answer to many requests (a scene's acknowledgement of each
/// update): each copy then costs its id and a copy of these bytes, where encoding the body
/// for each peer was a fifth of the broker's work per scene (`callgrind`: 25,000 of 132,000
/// instructions per receiver).
///
/// The bytes are the envelope's body field as protobuf encodes it. They travel as the
/// envelope's unknown fields, which swift-protobuf writes out as they are, after the fields it
/// knows; the peer reads an envelope like any other (a message is the concatenation of its
/// fields, in any order).
package struct PreparedBody: Sendable {
    let fields: UnknownStorage

    package init(_ body: Envelope.OneOf_Body) throws {
        var carrier = Envelope()
        carrier.body = body
        let bytes: [UInt8] = try carrier.serializedBytes()
        // A message without fields keeps every field it reads as unknown: the body's bytes.
        fields = try Google_Protobuf_Empty(serializedBytes: bytes).unknownFields
    }

    /// An envelope carrying these bytes as its body.
    func envelope(id: UInt64 = 0, replyTo: UInt64 = 0) -> Envelope {
        var envelope = Envelope()
        envelope.id = id
        envelope.replyTo = replyTo
        envelope.unknownFields = fields
        return envelope
    }
}

/// What a request carries: a body to encode, or one encoded already.
enum RequestBody {
    case body(Envelope.OneOf_Body)
    case prepared(PreparedBody)

    func envelope(id: UInt64) -> Envelope {
        switch self {
        case .body(let body):
            var envelope = Envelope()
            envelope.id = id
            envelope.body = body
            return envelope
        case .prepared(let prepared):
            return prepared.envelope(id: id)
        }
    }
}
