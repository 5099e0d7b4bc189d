import Foundation
import IPCWire

/// The scenes a compositor took off the screen when it went away (it ended or restarted), in
/// the order they are put back (the key one last), until a compositor is there again. Owned
/// by the broker; the broker's focus says which scenes were on screen.
struct CompositorLoss {
    /// The display the broker's scenes use.
    let display: WaylandSocket
    /// Scenes to put back, the key one last.
    private(set) var order: [SessionID] = []
    /// A task is watching for the compositor.
    var watching = false

    init(environment: [String: String]) {
        display = WaylandSocket(environment: environment)
    }

    var isWaiting: Bool { !order.isEmpty }

    /// A scene lost its compositor. The first of a loss records every scene on screen then
    /// (its fellows report theirs a moment later, when focus has already moved on); true for it.
    mutating func lost(_ id: SessionID, visible: [SessionID], key: SessionID?) -> Bool {
        let first = order.isEmpty
        if first {
            order = visible.filter { $0 != key } + (key.map { [$0] } ?? [])
        }
        return first
    }

    /// Put back (or gone): not waited for any more.
    mutating func returned(_ id: SessionID) {
        order.removeAll { $0 == id }
    }
}

/// The Wayland display's socket: `WAYLAND_DISPLAY` (a name in `XDG_RUNTIME_DIR`, or a path).
struct WaylandSocket: CustomStringConvertible {
    let path: String?

    init(environment: [String: String]) {
        guard let name = environment["WAYLAND_DISPLAY"], !name.isEmpty else {
            path = nil
            return
        }
        path = name.hasPrefix("/") ? name : (environment["XDG_RUNTIME_DIR"] ?? "") + "/" + name
    }

    var description: String { path ?? "none" }

    /// A compositor listens on it: a connection is accepted (and closed at once).
    var acceptsConnections: Bool {
        guard let path else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }
}
