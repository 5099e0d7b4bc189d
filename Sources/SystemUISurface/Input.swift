/// SystemUISurface: the system UI's surfaces (the switcher, the command overlay) above every
/// window on the user's Wayland compositor, drawn by the drawing library (C: wayland, cairo,
/// pango), which loads on first use. Only `windowbroker-ui` links it: scenes draw with GTK, and
/// the broker never links a display.
import CSceneWindowLoader
import IPCWire

/// A point on a surface, in surface pixels from its top left corner.
public struct Point: Sendable, Equatable, CustomStringConvertible {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    public func distance(to other: Point) -> Double { ((x - other.x) * (x - other.x) + (y - other.y) * (y - other.y)).squareRoot() }

    public var description: String { "(\(Int(x)), \(Int(y)))" }
}

/// The pointer over a surface: pressed, released or moved, where, and which button.
public struct PointerEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case down, up, moved
    }

    public var kind: Kind
    public var location: Point
    /// The evdev button code (`0x110` is the left button); 0 for a move.
    public var button: UInt32

    public init(kind: Kind, location: Point, button: UInt32 = 0) {
        self.kind = kind
        self.location = location
        self.button = button
    }
}

/// A key that went down over a surface: its xkb name at the base level (lower case), the
/// modifiers held, and the text it types with them ("" for none).
public struct KeyPress: Sendable, Equatable {
    public struct Modifiers: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let ctrl = Modifiers(rawValue: UInt32(SW_MOD_CTRL))
        public static let alt = Modifiers(rawValue: UInt32(SW_MOD_ALT))
        public static let shift = Modifiers(rawValue: UInt32(SW_MOD_SHIFT))
        public static let `super` = Modifiers(rawValue: UInt32(SW_MOD_SUPER))
    }

    public var name: String
    public var modifiers: Modifiers
    public var text: String

    public init(name: String, modifiers: Modifiers, text: String) {
        self.name = name
        self.modifiers = modifiers
        self.text = text
    }
}

/// Loading ahead of the first frame.
public enum DrawingLibrary {
    /// Starts loading the drawing library (wayland, cairo, pango: 40 libraries) and its fonts
    /// on a thread of their own when the process has a display, so that they load while the
    /// process starts; without a display they are never loaded.
    public static func preloadIfDisplayed() {
        if ProcessFacts.hasDisplay { wb_drawing_preload() }
    }
}
