import IPCWire
import Logging

/// A log handler for line-based outputs (stderr, a file): the message and every metadata value
/// have their control characters escaped (`\n`, `\r`, `\0`, `\u{1b}`), so text a scene supplies
/// (a title, an activity type, a worker's output) can neither forge a log line nor smuggle
/// terminal escapes. The journal keeps fields apart and needs no such wrapper.
public struct EscapingLogHandler<Wrapped: LogHandler>: LogHandler {
    public var wrapped: Wrapped

    public init(_ wrapped: Wrapped) {
        self.wrapped = wrapped
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: Self.escape(event.message.description))
        event.metadata = event.metadata?.mapValues(Self.escape)
        var wrapped = self.wrapped
        wrapped.metadata = wrapped.metadata.mapValues(Self.escape)
        wrapped.log(event: event)
    }

    static func escape(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): .string(escape(text))
        case .stringConvertible(let convertible): .string(escape(convertible.description))
        case .array(let values): .array(values.map(escape))
        case .dictionary(let values): .dictionary(values.mapValues(escape))
        }
    }

    /// Control characters as escapes; everything else (CJK, emoji) unchanged.
    public static func escape(_ text: String) -> String {
        text.escapingControlCharacters
    }
}
