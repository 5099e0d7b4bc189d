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

    /// The id a text names, in any case; nil for anything that is not a UUID (36 characters:
    /// 8-4-4-4-12 hexadecimal digits).
    ///
    /// Read here rather than by `UUID(uuidString:)`, which goes through `sscanf` (a scene
    /// reads one with every update it is delivered, the poster's, and the broker one with most
    /// requests): this is one pass over the bytes, and it accepts nothing but the form itself.
    public init?(_ text: String) {
        var text = text
        guard let uuid = text.withUTF8(Self.uuid(utf8:)) else { return nil }
        self.uuid = uuid
    }

    private static func uuid(utf8 text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let complete = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
            var index = 0
            var byte = 0
            while index < 36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard text[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                    continue
                }
                guard let high = hexValue(text[index]), let low = hexValue(text[index + 1]) else { return false }
                out[byte] = high << 4 | low
                byte += 1
                index += 2
            }
            return true
        }
        return complete ? UUID(uuid: bytes) : nil
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The one text form: the lowercase UUID, written directly (`uuidString` writes it in
    /// uppercase, and lowering it made a second string).
    public var description: String { Self.text(uuid, digits: "0123456789abcdef") }

    /// The uppercase form, exactly `UUID.uuidString` (the session store's keys, which the
    /// store writes with every commit), written the same way: `uuidString` formats it through
    /// `snprintf`.
    package var uppercaseText: String { Self.text(uuid, digits: "0123456789ABCDEF") }

    private static func text(_ uuid: UUID, digits: StaticString) -> String {
        String(unsafeUninitializedCapacity: 36) { out in
            withUnsafeBytes(of: uuid.uuid) { bytes in
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        out[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    out[index] = digits.utf8Start[Int(byte >> 4)]
                    out[index + 1] = digits.utf8Start[Int(byte & 0x0f)]
                    index += 2
                }
            }
            return 36
        }
    }

    /// The order of the text form (lowercase hexadecimal compares as the bytes do).
    public static func < (lhs: SessionID, rhs: SessionID) -> Bool {
        withUnsafeBytes(of: lhs.uuid.uuid) { left in
            withUnsafeBytes(of: rhs.uuid.uuid) { right in left.lexicographicallyPrecedes(right) }
        }
    }
}
