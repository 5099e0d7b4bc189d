#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A property-list value: the only kinds of data `userInfo` and action arguments may hold.
///
/// JSON input (wmctl `--info-json`) maps objects, arrays, strings, numbers, booleans and null
/// directly; the kinds JSON lacks are written as one-key objects: `{"$date": "2026-11-21T10:00:00Z"}`,
/// `{"$data": "<base64>"}`, `{"$url": "https://..."}`.
public enum PlistValue: Sendable, Hashable {
    /// Text.
    case string(String)
    /// A whole number.
    case integer(Int64)
    /// A floating-point number.
    case real(Double)
    /// True or false.
    case bool(Bool)
    /// Bytes (base64 in JSON).
    case data(Data)
    /// A point in time (ISO 8601 in JSON).
    case date(Date)
    /// A URL, kept as its text.
    case url(String)
    /// An ordered list.
    case list([PlistValue])
    /// Values by string key.
    case dictionary([String: PlistValue])
    /// No value (JSON's null).
    case null

    /// The text, when the value is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// Integers, or strings that spell one (action arguments arrive as text from the command line).
    public var integerValue: Int64? {
        switch self {
        case .integer(let i): return i
        case .string(let s): return Int64(s)
        case .real(let d) where d == d.rounded(): return Int64(exactly: d)
        default: return nil
        }
    }

    /// A dictionary's entry; nil for a missing key or a value that is not a dictionary.
    public subscript(key: String) -> PlistValue? {
        if case .dictionary(let d) = self { return d[key] }
        return nil
    }
}

// MARK: - Wire conversion

extension PlistValue {
    /// Converts from the wire, rejecting what is not a property list: values with no kind
    /// (a peer speaking a newer or broken schema), malformed URLs, non-finite dates and
    /// nesting deeper than `WireProtocol.maxUserInfoDepth`. `path` names the value in an error,
    /// and is only built for one (a scene decodes every update's payload: writing each entry's
    /// path out was string work per entry for messages that are almost never shown).
    package init(wire: Windowbroker_V1_PlistValue, path: @autoclosure () -> String = "userInfo", depth: Int = 0) throws(BrokerError) {
        if depth > WireProtocol.maxUserInfoDepth {
            throw BrokerError(.invalidUserInfo, "\(path()) nests deeper than \(WireProtocol.maxUserInfoDepth) levels")
        }
        switch wire.kind {
        case .stringValue(let s): self = .string(s)
        case .integerValue(let i): self = .integer(i)
        case .realValue(let d): self = .real(d)
        case .boolValue(let b): self = .bool(b)
        case .dataValue(let d): self = .data(d)
        case .dateValue(let t):
            guard t.isFinite else { throw BrokerError(.invalidUserInfo, "\(path()) is a date that is not a finite time") }
            self = .date(Date(timeIntervalSince1970: t))
        case .urlValue(let u):
            guard URL(string: u) != nil, !u.isEmpty else {
                throw BrokerError(.invalidUserInfo, "\(path()) is not a valid URL: \(u.prefix(80))")
            }
            self = .url(u)
        case .listValue(let l):
            var items: [PlistValue] = []
            items.reserveCapacity(l.items.count)
            for (i, item) in l.items.enumerated() {
                items.append(try PlistValue(wire: item, path: "\(path())[\(i)]", depth: depth + 1))
            }
            self = .list(items)
        case .dictionaryValue(let d):
            self = .dictionary(try PlistValue.dictionary(wire: d, path: path(), depth: depth + 1))
        case .nullValue: self = .null
        case .none:
            throw BrokerError(.invalidUserInfo, "\(path()) holds a value that is not a property-list type")
        }
    }

    /// A dictionary from the wire, checked like ``init(wire:path:depth:)``.
    package static func dictionary(
        wire: Windowbroker_V1_PlistDictionary, path: @autoclosure () -> String = "userInfo", depth: Int = 0
    ) throws(BrokerError) -> [String: PlistValue] {
        var out: [String: PlistValue] = [:]
        out.reserveCapacity(wire.entries.count)
        for entry in wire.entries {  // a key that comes twice: the last counts, as in a map
            out[entry.key] = try PlistValue(wire: entry.value, path: "\(path()).\(entry.key)", depth: depth)
        }
        return out
    }

    /// The value as the wire carries it.
    package var wire: Windowbroker_V1_PlistValue {
        .with {
            switch self {
            case .string(let s): $0.stringValue = s
            case .integer(let i): $0.integerValue = i
            case .real(let d): $0.realValue = d
            case .bool(let b): $0.boolValue = b
            case .data(let d): $0.dataValue = d
            case .date(let d): $0.dateValue = d.timeIntervalSince1970
            case .url(let u): $0.urlValue = u
            case .list(let l): $0.listValue = .with { $0.items = l.map(\.wire) }
            case .dictionary(let d): $0.dictionaryValue = PlistValue.wire(dictionary: d)
            case .null: $0.nullValue = true
            }
        }
    }

    /// A dictionary as the wire carries it, in key order: equal dictionaries encode to equal
    /// bytes and compare equal as messages.
    package static func wire(dictionary: [String: PlistValue]) -> Windowbroker_V1_PlistDictionary {
        .with {
            $0.entries = dictionary.sorted { $0.key < $1.key }.map { key, value in
                .with {
                    $0.key = key
                    $0.value = value.wire
                }
            }
        }
    }
}

// MARK: - JSON

extension PlistValue: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: Decoder) throws {
        if let single = try? decoder.singleValueContainer() {
            if single.decodeNil() { self = .null; return }
            if let b = try? single.decode(Bool.self) { self = .bool(b); return }
            if let i = try? single.decode(Int64.self) { self = .integer(i); return }
            if let d = try? single.decode(Double.self) { self = .real(d); return }
            if let s = try? single.decode(String.self) { self = .string(s); return }
        }
        if var array = try? decoder.unkeyedContainer() {
            var items: [PlistValue] = []
            while !array.isAtEnd { items.append(try array.decode(PlistValue.self)) }
            self = .list(items)
            return
        }
        let object = try decoder.container(keyedBy: Key.self)
        var entries: [String: PlistValue] = [:]
        for key in object.allKeys { entries[key.stringValue] = try object.decode(PlistValue.self, forKey: key) }
        if entries.count == 1, let (tag, value) = entries.first, case .string(let text) = value {
            switch tag {
            case "$date":
                guard let date = try? Date(text, strategy: .iso8601) else {
                    throw BrokerError(.invalidUserInfo, "\"$date\" must be an ISO 8601 date such as 2026-11-21T10:00:00Z, not \(text)")
                }
                self = .date(date)
                return
            case "$data":
                guard let data = Data(base64Encoded: text) else {
                    throw BrokerError(.invalidUserInfo, "\"$data\" must be base64")
                }
                self = .data(data)
                return
            case "$url":
                self = .url(text)
                return
            default: break
            }
        }
        self = .dictionary(entries)
    }

    /// Encodes for display: dates as ISO 8601 strings, data as base64, URLs as strings.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .integer(let i): try c.encode(i)
        case .real(let d): try c.encode(d)
        case .bool(let b): try c.encode(b)
        case .data(let d): try c.encode(d.base64EncodedString())
        case .date(let d): try c.encode(d.formatted(.iso8601))
        case .url(let u): try c.encode(u)
        case .list(let l): try c.encode(l)
        case .dictionary(let d): try c.encode(d)
        case .null: try c.encodeNil()
        }
    }

    /// Parses a JSON text into a value (used for `--info-json`).
    public static func parse(json: String) throws(BrokerError) -> PlistValue {
        do {
            return try JSONDecoder().decode(PlistValue.self, from: Data(json.utf8))
        } catch let error as BrokerError {
            throw error
        } catch {
            throw BrokerError(.invalidUserInfo, "not valid JSON: \(json.prefix(80))")
        }
    }
}
