import Foundation
import IPCWire
import NIOCore

/// What the broker knows of the compositor its scenes' windows are on: the display's socket,
/// which scene's window has the keyboard as the compositor last said, and the scenes it took
/// off the screen when it went away (it ended or restarted), until one is there again. Owned
/// by the broker; the broker's focus says which scenes were on screen.
struct Compositor {
    /// The display the broker's scenes use.
    private(set) var display: WaylandSocket
    /// The compositor has said where the keyboard is at least once (sway, weston, KWin do;
    /// headless nothing does): until then the broker's key scene is its own decision.
    private(set) var reportsFocus = false
    /// The scene whose window has the keyboard; nil: no scene's (another program's, or none).
    private(set) var keyboardHolder: SessionID?
    /// Scenes to put back after a loss, the key one last.
    private(set) var lostOrder: [SessionID] = []
    /// Why the compositor kept the keyboard from a scene the broker made key, for the answer
    /// of the activation that asked (`Broker.bringForward` takes it).
    var refusedKey: [SessionID: String] = [:]
    /// A task is watching for the compositor to come back.
    var watchingForReturn = false
    /// Key scenes waiting to hear that the compositor gave their windows the keyboard.
    private var waitingForKeyboard: [SessionID: [CheckedContinuation<Bool, Never>]] = [:]

    init(environment: [String: String]) {
        display = WaylandSocket(environment: environment)
    }

    /// Scenes use this display from now on (`wmctl display`); those waiting are put back there.
    mutating func use(_ display: WaylandSocket) {
        self.display = display
    }

    /// The compositor gave `id`'s window the keyboard, or took it away; whoever waited for
    /// the first is told.
    mutating func keyboard(_ id: SessionID, focused: Bool) {
        reportsFocus = true
        if focused {
            keyboardHolder = id
            for waiter in waitingForKeyboard.removeValue(forKey: id) ?? [] { waiter.resume(returning: true) }
        } else if keyboardHolder == id {
            keyboardHolder = nil
        }
    }

    /// Waits to be told (true) that `id`'s window got the keyboard, until `giveUp` (false).
    mutating func waitForKeyboard(_ id: SessionID, _ waiter: CheckedContinuation<Bool, Never>) {
        waitingForKeyboard[id, default: []].append(waiter)
    }

    /// The wait for `id`'s window ended without the keyboard.
    mutating func giveUp(_ id: SessionID) {
        for waiter in waitingForKeyboard.removeValue(forKey: id) ?? [] { waiter.resume(returning: false) }
    }

    /// `id`'s process is gone: its window has no keyboard.
    mutating func windowGone(_ id: SessionID) {
        if keyboardHolder == id { keyboardHolder = nil }
        giveUp(id)
    }

    var waitsToPutBack: Bool { !lostOrder.isEmpty }

    /// A scene lost its compositor. The first of a loss records every scene on screen then
    /// (its fellows report theirs a moment later, when focus has already moved on); true for it.
    mutating func lost(_ id: SessionID, visible: [SessionID], key: SessionID?) -> Bool {
        let first = lostOrder.isEmpty
        if first {
            lostOrder = visible.filter { $0 != key } + (key.map { [$0] } ?? [])
        }
        return first
    }

    /// Put back (or gone): not waited for any more.
    mutating func putBack(_ id: SessionID) {
        lostOrder.removeAll { $0 == id }
    }
}

/// The Wayland display's socket: `WAYLAND_DISPLAY` (a name in `XDG_RUNTIME_DIR`, or a path).
struct WaylandSocket: CustomStringConvertible {
    /// WAYLAND_DISPLAY as given; nil: none (headless).
    let name: String?
    let path: String?

    init(environment: [String: String]) {
        guard let name = environment["WAYLAND_DISPLAY"], !name.isEmpty else {
            self.name = nil
            path = nil
            return
        }
        self.name = name
        path = name.hasPrefix("/") ? name : (environment["XDG_RUNTIME_DIR"] ?? "") + "/" + name
    }

    var description: String { path ?? "none" }

    /// A compositor listens on it: a connection is accepted (and closed at once).
    var acceptsConnections: Bool {
        guard let path, let address = try? SocketAddress(unixDomainSocketPath: path) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return address.withSockAddr { connect(fd, $0, socklen_t($1)) == 0 }
    }
}
