#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A scene session's identity, the same across reclaims and broker restarts: a UUID with one
/// text form everywhere a person or a program sees it (lowercase: the wire, `wmctl`, logs,
/// file names). Any case is accepted on the way in.
public struct SessionID: Hashable, Sendable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    /// The UUID itself.
    public let uuid: UUID

    /// A new, random one.
    public init() {
        uuid = UUID()
    }

    /// The id that is this UUID.
    public init(_ uuid: UUID) {
        self.uuid = uuid
    }

    /// The id a text names, in any case; nil for anything that is not a UUID.
    public init?(_ text: String) {
        guard let uuid = UUID(uuidString: text) else { return nil }
        self.uuid = uuid
    }

    /// The one text form: the lowercase UUID.
    public var description: String { uuid.uuidString.lowercased() }

    public static func < (lhs: SessionID, rhs: SessionID) -> Bool {
        lhs.uuid.uuidString < rhs.uuid.uuidString
    }
}
