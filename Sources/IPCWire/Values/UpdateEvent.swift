#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An event an app's model posts to every connected scene of the app: the one-way data flow of
/// a `NotificationCenter` post, across processes. The broker gives each event its place in the
/// app's one order of updates (`sequence`).
public struct UpdateEvent: Sendable, Hashable {
    /// What happened, in the app's own words (`noteChanged`).
    public var name: String
    /// The details, at most 256 KiB.
    public var payload: [String: PlistValue]
    /// Set on delivery: strictly increasing per connection, the same order in every scene.
    public var sequence: UInt64 = 0
    /// Set on delivery: when the broker took it, and the posting scene's session (nil: from outside).
    public var postedAt: Date?
    /// The posting scene's session; nil when posted from outside (`wmctl post`).
    public var postedBy: SessionID?

    /// An event to post with `Scene.post(_:)`.
    public init(name: String, payload: [String: PlistValue] = [:]) {
        self.name = name
        self.payload = payload
    }

    /// An event from the wire, in its place in the app's order.
    package init(wire: Windowbroker_V1_UpdateEvent, sequence: UInt64) throws(BrokerError) {
        self.init(name: wire.name, payload: try PlistValue.dictionary(wire: wire.payload, path: "payload"))
        self.sequence = sequence
        postedAt = wire.postedAt > 0 ? Date(timeIntervalSince1970: wire.postedAt) : nil
        postedBy = SessionID(wire.postedBy)
    }
}

/// The checks every receiver of keys and plist dictionaries makes, with messages that say
/// which limit was hit.
public enum SyncLimits {
    /// A default's key, a storage key or an update's name: non-empty, at most `maxKeyBytes`.
    public static func checkKey(_ key: String, what: String) throws(BrokerError) {
        guard !key.isEmpty else { throw BrokerError(.invalidRequest, "\(what) is empty") }
        guard key.utf8.count <= WireProtocol.maxKeyBytes else {
            throw BrokerError(.invalidRequest, "\(what) is \(key.utf8.count) bytes; the limit is \(WireProtocol.maxKeyBytes)")
        }
    }

    /// The encoded size of a dictionary, refused over `maxBytes`.
    @discardableResult
    public static func checkSize(_ dictionary: [String: PlistValue], maxBytes: Int, what: String) throws(BrokerError) -> Int {
        let size = encodedSize(dictionary)
        guard size <= maxBytes else {
            throw BrokerError(.payloadTooLarge, "\(what) would be \(size) bytes encoded; the limit is \(maxBytes)")
        }
        return size
    }

    /// The bytes a dictionary takes on the wire.
    public static func encodedSize(_ dictionary: [String: PlistValue]) -> Int {
        (try? PlistValue.wire(dictionary: dictionary).serializedBytes() as [UInt8])?.count ?? Int.max
    }
}

extension PlistValue {
    /// The protobuf encoding: the at-rest form of defaults and scene storage.
    public func serialized() -> Data {
        (try? wire.serializedData()) ?? Data()
    }

    /// A value from its stored protobuf bytes.
    public init(serialized data: Data) throws(BrokerError) {
        let decoded: Windowbroker_V1_PlistValue
        do { decoded = try Windowbroker_V1_PlistValue(serializedBytes: data) } catch {
            throw BrokerError(.internalError, "a stored value could not be decoded: \(error)")
        }
        try self.init(wire: decoded, path: "value")
    }

    /// The flag, when the value is a bool.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }
}
