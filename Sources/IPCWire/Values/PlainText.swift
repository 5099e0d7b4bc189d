import Glibc

extension String {
    /// `printf`-style formatting of numbers (`%.1f`, `%02d`, `%02x`) through the C library.
    /// `String(format:)` is Foundation's, not FoundationEssentials', and linking Foundation
    /// brings ICU into every binary; the numbers here need none of it.
    package init(printf format: String, _ arguments: CVarArg...) {
        self = cFormatted(format, arguments)
    }
}

private func cFormatted(_ format: String, _ arguments: [CVarArg]) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    let count = Int(withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) })
    if count >= buffer.count {
        // Longer than the buffer: once more with room for all of it.
        buffer = [CChar](repeating: 0, count: count + 1)
        _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
    }
    return String(decoding: buffer.prefix(max(0, count)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension String {
    /// The text with its control characters as escapes (`\n`, `\r`, `\t`, `\0`, `\u{1b}`, and
    /// the C1 controls and line separators), everything else (CJK, emoji) unchanged: text a
    /// scene supplies (a title, an activity type, its output) can then neither forge a line of
    /// a log or a table nor send a terminal escapes.
    package var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: Self.needsEscape) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\0": out += "\\0"
            case _ where Self.needsEscape(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}

/// Writing to a descriptor without Foundation's `FileHandle` (Foundation, not Essentials).
package enum PlainOutput {
    /// Writes all of `text` to `descriptor`, unbuffered, going on after interruptions. Returns
    /// nil, or the `errno` that stopped it (`EPIPE`: the reader went away).
    @discardableResult
    package static func write(_ text: String, to descriptor: Int32) -> Int32? {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            bytes = bytes.dropFirst(written)
        }
        return nil
    }
}
