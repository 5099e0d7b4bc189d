import CSystemd
import Foundation
import Logging

/// A swift-log handler that writes structured entries to the journal with `sd_journal_sendv`
/// (the variadic `sd_journal_send` does not import into Swift). Metadata become upper-case
/// journal fields; the broker's own keys map to the documented names (`SESSION_ID`, `APP_ID`,
/// `WORKER_PID`, `EVENT`).
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public let label: String
    let identifier: String

    public init(label: String, identifier: String = "windowbrokerd") {
        self.label = label
        self.identifier = identifier
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Broker metadata keys with a documented journal field name.
    static let knownFields: [String: String] = [
        "session": "SESSION_ID", "app": "APP_ID", "pid": "WORKER_PID", "event": "EVENT",
    ]

    public func log(event: LogEvent) {
        let entry = Self.fields(
            level: event.level, message: event.message.description,
            metadata: metadata.merging(event.metadata ?? [:]) { _, new in new },
            label: label, identifier: identifier, file: event.file, function: event.function, line: event.line)
        Self.send(entry)
    }

    /// The journal fields for one entry, in order, as `NAME=value` strings. Pure, for tests.
    public static func fields(
        level: Logger.Level, message: String, metadata: Logger.Metadata, label: String, identifier: String,
        file: String, function: String, line: UInt
    ) -> [String] {
        var out = [
            "MESSAGE=\(message)",
            "PRIORITY=\(priority(level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "LOGGER=\(label)",
            "CODE_FILE=\(file)",
            "CODE_LINE=\(line)",
            "CODE_FUNC=\(function)",
        ]
        var used = Set(out.map { String($0.prefix { $0 != "=" }) })
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            let name = knownFields[key] ?? fieldName(key)
            guard !name.isEmpty, used.insert(name).inserted else { continue }
            out.append("\(name)=\(value)")
        }
        return out
    }

    /// syslog priorities, as the journal expects.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Journal field names: upper-case letters, digits and `_`, not starting with `_` (those are
    /// trusted fields) or a digit, at most 64 characters.
    public static func fieldName(_ key: String) -> String {
        var name = String(key.uppercased().map { ($0.isASCII && ($0.isLetter || $0.isNumber)) ? $0 : "_" })
        while let first = name.first, first == "_" || first.isNumber { name.removeFirst() }
        return String(name.prefix(64))
    }

    /// Hands the fields to the journal. Values may hold newlines: sd_journal_sendv encodes them.
    static func send(_ fields: [String]) {
        var buffers = fields.map { Array($0.utf8) }
        var vectors: [iovec] = []
        vectors.reserveCapacity(buffers.count)
        for i in buffers.indices {
            buffers[i].withUnsafeMutableBytes { raw in
                vectors.append(iovec(iov_base: raw.baseAddress, iov_len: raw.count))
            }
        }
        // The pointers stay valid: `buffers` is not mutated again before the call returns.
        withExtendedLifetime(buffers) {
            _ = sd_journal_sendv(vectors, Int32(vectors.count))
        }
    }
}
