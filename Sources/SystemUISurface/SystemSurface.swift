import CSceneWindowLoader
import IPCWire
import Dispatch
import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A surface of the system UI above every window (wlroots' layer shell, else a full-screen
/// window): the switcher and the command overlay draw into one. Every call and callback happens on the main queue.
@MainActor
public final class SystemSurface {
    public enum OpenError: Error, CustomStringConvertible {
        case unavailable(String)
        public var description: String {
            switch self {
            case .unavailable(let reason): reason
            }
        }
    }

    /// A decoded snapshot, drawn scaled into a card.
    public final class Picture {
        fileprivate let pointer: OpaquePointer
        /// The most a card's picture may declare a side: a thumbnail is far smaller, and a
        /// picture claiming more is not decoded (a few KiB of PNG can claim gigabytes).
        public static let maxSide = 1024

        /// nil when `png` is not a PNG, declares more than `maxSide` a side, or does not decode.
        public init?(png: Data) {
            let header = [UInt8](png.prefix(24))
            guard header.count == 24, header[12..<16].elementsEqual("IHDR".utf8) else { return nil }
            let side = { (at: Int) in header[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
            guard (1...Self.maxSide).contains(side(16)), (1...Self.maxSide).contains(side(20)) else { return nil }
            guard let decoded = png.withUnsafeBytes({ raw in
                ss_picture_from_png(raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
            }) else { return nil }
            pointer = decoded
        }
        deinit { ss_picture_free(pointer) }
    }

    public struct Card {
        public enum Kind: Sendable { case session, newWindow }
        public var kind: Kind
        public var title: String
        public var detail: String
        public var picture: Picture?
        public init(kind: Kind, title: String, detail: String, picture: Picture?) {
            self.kind = kind
            self.title = title
            self.detail = detail
            self.picture = picture
        }
    }

    /// A line of the command overlay: a group's title (`shortcut` nil) or a command.
    public struct Row: Sendable {
        public var title: String
        public var shortcut: String?
        public init(title: String, shortcut: String?) {
            self.title = title
            self.shortcut = shortcut
        }
    }

    public struct Frame: Sendable, Equatable {
        public var x, y, width, height: Int
    }

    public var onConfigure: ((WindowSize) -> Void)?
    public var onClosed: (() -> Void)?
    public var onKey: ((KeyPress) -> Void)?
    public var onPointer: ((PointerEvent) -> Void)?
    /// A frame is on screen (its number, 1 for the first).
    public var onPresented: ((Int) -> Void)?
    /// The connection to the compositor ended.
    public var onDisconnect: (() -> Void)?
    public private(set) var size = WindowSize(width: 0, height: 0)

    private var surface: OpaquePointer?
    private var source: DispatchSourceRead?
    /// Inside ss_dispatch (a callback is running): closing then would free the connection
    /// under libwayland's feet, so it waits until the dispatch returns.
    private var dispatching = false
    private var closeRequested = false

    /// Asks for a layer surface under `namespace` (a full-screen window without the layer shell);
    /// with `keyboard`, it takes the keyboard while shown. Throws `OpenError` without a
    /// compositor or a shell.
    public init(namespace: String, keyboard: Bool) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var callbacks = ss_callbacks()
        callbacks.context = context
        callbacks.configure = { context, width, height in
            guard let surface = SystemSurface.from(context) else { return }
            MainActor.assumeIsolated {
                surface.size = WindowSize(width: Int(width), height: Int(height))
                surface.onConfigure?(surface.size)
            }
        }
        callbacks.closed = { context in
            guard let surface = SystemSurface.from(context) else { return }
            MainActor.assumeIsolated { surface.onClosed?() }
        }
        callbacks.key = { context, name, modifiers, text in
            guard let surface = SystemSurface.from(context), let name else { return }
            let press = KeyPress(name: String(cString: name), modifiers: .init(rawValue: modifiers), text: text.map { String(cString: $0) } ?? "")
            MainActor.assumeIsolated { surface.onKey?(press) }
        }
        callbacks.pointer = { context, kind, x, y, button in
            guard let surface = SystemSurface.from(context) else { return }
            let kind: PointerEvent.Kind = kind == Int32(SW_POINTER_DOWN) ? .down : kind == Int32(SW_POINTER_UP) ? .up : .moved
            let event = PointerEvent(kind: kind, location: Point(x: x, y: y), button: button)
            MainActor.assumeIsolated { surface.onPointer?(event) }
        }
        callbacks.presented = { context, frame in
            guard let surface = SystemSurface.from(context) else { return }
            MainActor.assumeIsolated { surface.onPresented?(Int(frame)) }
        }
        var reason = [CChar](repeating: 0, count: 256)
        guard let opened = ss_open(namespace, keyboard ? 1 : 0, callbacks, &reason, Int32(reason.count)) else {
            throw OpenError.unavailable(String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        surface = opened
        let source = DispatchSource.makeReadSource(fileDescriptor: ss_fd(opened), queue: .main)
        source.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                guard let self, let surface = self.surface else { return }
                self.dispatching = true
                let result = ss_dispatch(surface)
                self.dispatching = false
                if self.closeRequested {
                    self.close()
                } else if result < 0 {
                    self.close()
                    self.onDisconnect?()
                }
            }
        }
        source.resume()
        self.source = source
    }

    private nonisolated static func from(_ context: UnsafeMutableRawPointer?) -> SystemSurface? {
        context.map { Unmanaged<SystemSurface>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Draws the switcher's cards, `selected` outlined and scrolled into view.
    public func drawCards(heading: String, hint: String, cards: [Card], selected: Int) {
        guard let surface, !closeRequested else { return }
        withCStrings(cards.flatMap { [$0.title, $0.detail] }) { strings in
            var raw = cards.enumerated().map { index, card in
                ss_card(kind: card.kind == .newWindow ? Int32(SS_CARD_NEW_WINDOW) : Int32(SS_CARD_SESSION),
                        title: strings[2 * index], detail: strings[2 * index + 1], picture: card.picture?.pointer)
            }
            ss_draw_cards(surface, heading, hint, &raw, Int32(raw.count), Int32(selected))
        }
    }

    /// The item (a card, a command row) under `point` in the last frame.
    public func item(at point: Point) -> Int? {
        guard let surface else { return nil }
        let index = Int(ss_item_at(surface, point.x, point.y))
        return index >= 0 ? index : nil
    }

    /// Where item `index` (a card or a row) was drawn in the last frame; nil when it was not.
    public func frame(ofItem index: Int) -> Frame? {
        guard let surface else { return nil }
        var frame: [Int32] = [0, 0, 0, 0]
        guard ss_item_frame(surface, Int32(index), &frame) != 0 else { return nil }
        return Frame(x: Int(frame[0]), y: Int(frame[1]), width: Int(frame[2]), height: Int(frame[3]))
    }

    /// Draws the command overlay's panel, `selected` (a row index) highlighted.
    public func drawRows(heading: String, rows: [Row], selected: Int?) {
        guard let surface, !closeRequested else { return }
        withCStrings(rows.flatMap { [$0.title, $0.shortcut ?? ""] }) { strings in
            var raw = rows.enumerated().map { index, row in
                ss_row(title: strings[2 * index], shortcut: row.shortcut == nil ? nil : strings[2 * index + 1])
            }
            ss_draw_rows(surface, heading, &raw, Int32(raw.count), Int32(selected ?? -1))
        }
    }

    /// Unmaps the surface and disconnects.
    public func close() {
        if dispatching {
            closeRequested = true
            return
        }
        source?.cancel()
        source = nil
        if let surface { ss_close(surface) }
        surface = nil
    }

    public var isOpen: Bool { surface != nil && !closeRequested }
}

/// Runs `body` with C copies of the strings, valid for its duration.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) })
}
