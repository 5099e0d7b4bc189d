import Foundation

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

    /// A shortcut from its parts; throws `invalidRequest` for a key without a modifier that needs one.
    public init(modifiers: Set<Modifier>, key: String) throws(BrokerError) {
        let key = key.lowercased()
        guard !key.isEmpty, key.unicodeScalars.allSatisfy({ ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" }) else {
            throw BrokerError(.invalidRequest, "'\(key)' is not a key symbol (an xkb name such as u, bracketleft, tab, f5)")
        }
        let isFunctionKey = key.count >= 2 && key.first == "f" && Int(key.dropFirst()).map { (1...24).contains($0) } == true
        guard !modifiers.isEmpty || isFunctionKey || key == "escape" else {
            throw BrokerError(.invalidRequest, "'\(key)' without a modifier would take the key from typing; add ctrl, alt, shift or super")
        }
        self.modifiers = modifiers
        self.key = key
    }

    /// Parses `ctrl+shift+u` (case and modifier order do not matter; `control`, `meta`, `win` are understood).
    public init(parsing text: String) throws(BrokerError) {
        let parts = text.split(separator: "+", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
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
