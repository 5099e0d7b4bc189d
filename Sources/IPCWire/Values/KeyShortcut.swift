#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A keyboard shortcut as key symbols: modifiers and one xkb key name (`ctrl+bracketleft`),
/// not characters, so a layout-aware front end can show and match it for the user's layout.
/// The canonical text puts the modifiers in a fixed order and the key in lower case, so two
/// spellings of one shortcut are one shortcut (`Shift+Ctrl+U` is `ctrl+shift+u`).
public struct KeyShortcut: Hashable, Sendable, CustomStringConvertible {
    /// A modifier key, by its xkb name.
    public enum Modifier: String, CaseIterable, Sendable, Comparable {
        /// Control, Alt, Shift, and the Super (logo) key.
        case ctrl, alt, shift, `super`

        public static func < (a: Modifier, b: Modifier) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// The modifiers held.
    public var modifiers: Set<Modifier>
    /// The key's xkb symbol name, lowercase (`u`, `grave`, `f12`).
    public var key: String

    private static let aliases: [String: Modifier] = [
        "control": .ctrl, "ctl": .ctrl, "meta": .alt, "option": .alt, "win": .super, "logo": .super, "mod4": .super,
    ]

    /// xkb names of keys that type a character (besides letters and digits).
    static let typingKeys: Set<String> = [
        "space", "grave", "minus", "equal", "bracketleft", "bracketright", "backslash", "semicolon",
        "apostrophe", "comma", "period", "slash", "less",
    ]
    /// xkb names of keys that type nothing.
    static let otherKeys: Set<String> = [
        "escape", "tab", "return", "backspace", "delete", "insert", "home", "end", "prior", "next",
        "page_up", "page_down", "left", "right", "up", "down", "print", "pause", "menu",
    ]

    /// Whether `key` is an xkb key name this accepts: a letter, a digit, f1 to f24, or a named key.
    public static func isKeyName(_ key: String) -> Bool {
        if key.count == 1, let c = key.unicodeScalars.first, c.isASCII, c.properties.isAlphabetic || ("0"..."9").contains(c) { return true }
        return isFunctionKey(key) || typingKeys.contains(key) || otherKeys.contains(key)
    }

    static func isFunctionKey(_ key: String) -> Bool {
        key.count >= 2 && key.first == "f" && Int(key.dropFirst()).map { (1...24).contains($0) } == true
    }

    /// A shortcut from its parts; throws `invalidRequest` for a key that is not a key name, or
    /// for one that would take the key from typing (no modifier, or shift alone on a key that types).
    public init(modifiers: Set<Modifier>, key: String) throws(BrokerError) {
        let key = key.lowercased()
        guard Self.isKeyName(key) else {
            throw BrokerError(.invalidRequest, "'\(key)' is not a key name (a letter, a digit, f1 to f24, or an xkb name such as bracketleft, tab, escape, page_up)")
        }
        let types = key.count == 1 || Self.typingKeys.contains(key)
        guard !modifiers.isEmpty || Self.isFunctionKey(key) || key == "escape" else {
            throw BrokerError(.invalidRequest, "'\(key)' without a modifier would take the key from typing; add ctrl, alt or super")
        }
        guard !(modifiers == [.shift] && types) else {
            throw BrokerError(.invalidRequest, "shift+\(key) types a character; a shortcut needs ctrl, alt or super with it")
        }
        self.modifiers = modifiers
        self.key = key
    }

    /// Parses `ctrl+shift+u` (case and modifier order do not matter; `control`, `meta`, `win` are understood).
    public init(parsing text: String) throws(BrokerError) {
        let parts = text.split(separator: "+", omittingEmptySubsequences: false).map { $0.trimmingSpaces.lowercased() }
        guard parts.count >= 1, let key = parts.last, !key.isEmpty else {
            throw BrokerError(.invalidRequest, "'\(text)' is not a shortcut; write it like ctrl+shift+u")
        }
        var modifiers: Set<Modifier> = []
        for part in parts.dropLast() {
            guard let modifier = Modifier(rawValue: part) ?? Self.aliases[part] else {
                throw BrokerError(.invalidRequest, "'\(part)' in '\(text)' is not a modifier (ctrl, alt, shift, super)")
            }
            guard modifiers.insert(modifier).inserted else {
                throw BrokerError(.invalidRequest, "'\(text)' names \(modifier) twice")
            }
        }
        try self.init(modifiers: modifiers, key: key)
    }

    public var description: String {
        (modifiers.sorted().map(\.rawValue) + [key]).joined(separator: "+")
    }
}

extension StringProtocol {
    /// The text without spaces and tabs at either end (what `trimmingCharacters(in:
    /// .whitespaces)` does, without linking all of Foundation for it).
    package var trimmingSpaces: String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return String(self[first...last])
    }
}
