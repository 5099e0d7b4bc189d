/// SceneWindow: a scene's window on the user's Wayland compositor. The SDK (SceneWorker) opens
/// one when its scene comes to the foreground and a display is there (`WAYLAND_DISPLAY`), hides
/// it by closing it when the scene goes to the background, and redraws it when the scene asks.
/// The broker never links this module: windows belong to the scenes' own processes.
import CSceneWindowLoader
import Dispatch
import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A size in surface pixels (scale 1).
public struct WindowSize: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}

/// What a scene draws: a heading (its title by default) and a text with an optional cursor.
@MainActor
public final class DrawingContext {
    /// The window's size as the compositor configured it.
    public let size: WindowSize
    public var heading: String
    public private(set) var text = ""
    /// The cursor as a character offset into `text`; nil draws none.
    public private(set) var cursor: Int?

    init(size: WindowSize, heading: String) {
        self.size = size
        self.heading = heading
    }

    /// The text to show, wrapped to the window's width, with a cursor before the character at `cursor`.
    public func text(_ text: String, cursor: Int? = nil) {
        self.text = text
        self.cursor = cursor
    }

    /// The cursor as the byte offset pango wants (characters are grapheme clusters here).
    var cursorByteOffset: Int32 {
        guard let cursor else { return -1 }
        let index = text.index(text.startIndex, offsetBy: max(0, min(cursor, text.count)))
        return Int32(text[..<index].utf8.count)
    }
}

/// A picture of a scene as its window draws it (the same drawing code), made without a
/// compositor: what the app switcher shows for a session whose window is gone.
public struct Snapshot: Sendable, Equatable {
    public var size: WindowSize
    public var png: Data
    /// The same picture scaled to fit a switcher card (244 x 154), PNG; nil when it could not
    /// be made.
    public var thumbnailPNG: Data?
    /// What was drawn (size, heading, text, cursor), to reuse a snapshot of the same picture.
    let content: Int

    /// Draws a frame of `size` with `draw` (the scene's `draw(_:in:)`) and encodes it as PNG;
    /// `previous` when it shows the same picture (encoding is the costly part).
    @MainActor
    public static func render(size: WindowSize, heading: String, reusing previous: Snapshot? = nil, draw: (DrawingContext) -> Void) -> Snapshot? {
        let context = DrawingContext(size: size, heading: heading)
        draw(context)
        var hasher = Hasher()
        hasher.combine(size.width)
        hasher.combine(size.height)
        hasher.combine(context.heading)
        hasher.combine(context.text)
        hasher.combine(context.cursor)
        let content = hasher.finalize()
        if let previous, previous.content == content { return previous }
        var length = 0
        var thumbnail: UnsafeMutablePointer<UInt8>?
        var thumbnailLength = 0
        let bytes = sw_snapshot_png(
            Int32(size.width), Int32(size.height), context.heading, context.text, context.cursorByteOffset, &length, &thumbnail, &thumbnailLength)
        defer {
            sw_free(bytes)
            sw_free(thumbnail)
        }
        guard let bytes else { return nil }
        return Snapshot(size: size, png: Data(bytes: bytes, count: length),
                        thumbnailPNG: thumbnail.map { Data(bytes: $0, count: thumbnailLength) }, content: content)
    }
}

/// A point in a window, in surface pixels from its top left corner.
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

/// The pointer over a window: pressed, released or moved, where, and which button.
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

/// A key that went down in a window: its xkb name at the base level (lower case), the
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

/// An open window: an xdg_toplevel with the app's id and the scene's title.
@MainActor
public final class ToplevelWindow {
    /// The compositor configured the window (its size; whether it is activated, i.e. has the keyboard).
    public var onConfigure: ((WindowSize, Bool) -> Void)?
    /// The user asked to close the window.
    public var onCloseRequest: (() -> Void)?
    /// A key went down while the window has the keyboard.
    public var onKey: ((KeyPress) -> Void)?
    /// The pointer pressed, released or moved over the window.
    public var onPointer: ((PointerEvent) -> Void)?
    /// Something a scene dragged was dropped on the window: its data (a serialised user
    /// activity) and where. Return whether the window took it.
    public var onDrop: ((Data, Point) -> Bool)?
    /// A drag this window started is over: true when a window took it, false when it was
    /// cancelled (dropped on no window, or on one that does not take it).
    public var onDragEnded: ((Bool) -> Void)?
    /// The modifiers held changed while the window has the keyboard (empty when it loses it).
    public var onModifiers: ((KeyPress.Modifiers) -> Void)?
    public private(set) var size = WindowSize(width: 0, height: 0)
    public private(set) var isActivated = false

    private var window: OpaquePointer?
    private var source: DispatchSourceRead?

    public enum OpenError: Error, CustomStringConvertible {
        case unavailable(String)
        public var description: String {
            switch self {
            case .unavailable(let reason): reason
            }
        }
    }

    /// Loads what the first frame needs (fontconfig, the fonts) ahead of it: a prewarmed
    /// scene process does this while it waits in its pool.
    public static func warmUp() {
        sw_warm_up()
    }

    /// Connects to the compositor and learns its globals ahead of the first window (the
    /// preloading thread starts it; a prewarmed scene process waits for it before it joins
    /// its pool), so that its window costs one round trip to the compositor when it opens
    /// (the configure), not three (the connection, the globals, the configure). The first
    /// window takes the connection; one that no longer works (the compositor went away) is
    /// replaced by a new one.
    public static func prepareConnection() {
        _ = sw_prepare()
    }

    /// Starts loading the drawing library (wayland, cairo, pango: 40 libraries) on a thread
    /// of its own when the process has a display, so that it loads while the process connects
    /// and says Hello; without a display it is never loaded. Called first thing at start.
    /// `connecting`: a scene's process, whose first window takes the connection to the
    /// compositor that thread makes too (`prepareConnection`).
    public nonisolated static func preloadIfDisplayed(connecting: Bool = false) {
        if displayAvailable { wb_drawing_preload(connecting ? 1 : 0) }
    }

    /// Whether this process was given a display to open windows on. Asked at launch, at every
    /// foreground and for every snapshot: one variable, not a dictionary of the whole
    /// environment (`ProcessInfo.environment` builds one per call, 20-37 µs here).
    public nonisolated static var displayAvailable: Bool {
        guard let display = getenv("WAYLAND_DISPLAY") else { return false }
        return display.pointee != 0
    }

    /// Maps a window; it is drawn once the compositor has configured it.
    public init(appID: String, title: String) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var callbacks = sw_callbacks()
        callbacks.context = context
        callbacks.configure = { context, width, height, activated in
            guard let context else { return }
            let window = Unmanaged<ToplevelWindow>.fromOpaque(context).takeUnretainedValue()
            MainActor.assumeIsolated { window.configured(WindowSize(width: Int(width), height: Int(height)), activated: activated != 0) }
        }
        callbacks.close = { context in
            guard let context else { return }
            let window = Unmanaged<ToplevelWindow>.fromOpaque(context).takeUnretainedValue()
            MainActor.assumeIsolated { window.onCloseRequest?() }
        }
        callbacks.key = { context, name, modifiers, text in
            guard let context, let name else { return }
            let window = Unmanaged<ToplevelWindow>.fromOpaque(context).takeUnretainedValue()
            let press = KeyPress(name: String(cString: name), modifiers: .init(rawValue: modifiers), text: text.map { String(cString: $0) } ?? "")
            MainActor.assumeIsolated { window.onKey?(press) }
        }
        callbacks.pointer = { context, kind, x, y, button in
            guard let context else { return }
            let window = Unmanaged<ToplevelWindow>.fromOpaque(context).takeUnretainedValue()
            let kind: PointerEvent.Kind = kind == Int32(SW_POINTER_DOWN) ? .down : kind == Int32(SW_POINTER_UP) ? .up : .moved
            let event = PointerEvent(kind: kind, location: Point(x: x, y: y), button: button)
            MainActor.assumeIsolated { window.onPointer?(event) }
        }
        callbacks.drop = { context, bytes, length, x, y in
            guard let context, let bytes else { return 0 }
            let window = Unmanaged<ToplevelWindow>.fromOpaque(context).takeUnretainedValue()
            let data = Data(bytes: bytes, count: Int(length))
            return MainActor.assumeIsolated { window.onDrop?(data, Point(x: x, y: y)) ?? false } ? 1 : 0
        }
        callbacks.drag_ended = { context, dropped in
            guard let context else { return }
            let window = Unmanaged<ToplevelWindow>.fromOpaque(context).takeUnretainedValue()
            MainActor.assumeIsolated { window.onDragEnded?(dropped != 0) }
        }
        callbacks.modifiers = { context, modifiers in
            guard let context else { return }
            let window = Unmanaged<ToplevelWindow>.fromOpaque(context).takeUnretainedValue()
            MainActor.assumeIsolated { window.onModifiers?(.init(rawValue: modifiers)) }
        }
        var reason = [CChar](repeating: 0, count: 256)
        guard let opened = sw_open(appID, title, callbacks, &reason, Int32(reason.count)) else {
            throw OpenError.unavailable(String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        window = opened
        // Events are read on the main queue, where every other call on the window happens too.
        let source = DispatchSource.makeReadSource(fileDescriptor: sw_fd(opened), queue: .main)
        source.setEventHandler { [weak self] in
            MainActor.assumeIsolated { self?.dispatch() }
        }
        source.resume()
        self.source = source
    }

    private func dispatch() {
        guard let window else { return }
        if sw_dispatch(window) < 0 {
            // The compositor went away: the scene goes on without a window.
            close()
        }
    }

    private func configured(_ size: WindowSize, activated: Bool) {
        self.size = size
        isActivated = activated
        onConfigure?(size, activated)
    }

    public func setTitle(_ title: String) {
        guard let window else { return }
        sw_set_title(window, title)
    }

    /// Draws a frame from what the scene put in the context.
    public func render(_ context: DrawingContext) {
        guard let window else { return }
        sw_render(window, context.heading, context.text, context.cursorByteOffset)
    }

    /// A context of the window's current size for the scene to fill.
    public func makeContext(heading: String) -> DrawingContext {
        DrawingContext(size: size, heading: heading)
    }

    /// Asks the compositor to give the window the keyboard (xdg-activation), with the token of
    /// whoever asked for it, else one of its own. False when the compositor cannot be asked.
    @discardableResult
    public func activate(token: String?) -> Bool {
        guard let window else { return false }
        return sw_activate(window, token) != 0
    }

    /// Starts dragging `data` out of the window (only while a pointer button is down: the press
    /// is what the compositor ties the drag to). False when it cannot.
    public func startDrag(_ data: Data) -> Bool {
        guard let window else { return false }
        return data.withUnsafeBytes { raw in
            sw_start_drag(window, raw.bindMemory(to: UInt8.self).baseAddress, Int32(raw.count)) != 0
        }
    }

    /// The character offset into `text` (as last drawn) at `point`, nil when the point is
    /// not over the text.
    public func characterIndex(at point: Point, in text: String) -> Int? {
        guard let window else { return nil }
        let byte = Int(sw_text_index_at(window, point.x, point.y))
        guard byte >= 0 else { return nil }
        let utf8 = text.utf8
        guard let index = utf8.index(utf8.startIndex, offsetBy: byte, limitedBy: utf8.endIndex) else { return text.count }
        return text.distance(from: text.startIndex, to: index.samePosition(in: text) ?? text.endIndex)
    }

    /// Unmaps the window and disconnects from the compositor.
    public func close() {
        source?.cancel()
        source = nil
        if let window { sw_close(window) }
        window = nil
    }

    public var isOpen: Bool { window != nil }
}
