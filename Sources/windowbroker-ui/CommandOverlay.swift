#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire
import SystemUISurface

/// The command overlay: while the command key is held over a scene, the commands of its app
/// that have shortcuts, grouped by menu, with the discoverability titles, disabled and hidden
/// ones left out (what `wmctl commands --overlay` lists). It leaves the keyboard with the
/// scene, so the shortcut itself still works; a click on a command performs it through the
/// broker's dispatch. The broker ends it when the key is released.
@MainActor
final class CommandOverlay {
    private struct Line {
        var id: String?
        var row: SystemSurface.Row
    }

    private let client: BrokerClient
    private var session = ""
    private var heading = ""
    private var lines: [Line] = []
    private var hovered: Int?
    private var surface: SystemSurface?
    private let end = RunEnd()

    private init(client: BrokerClient) {
        self.client = client
    }

    static func run(client: BrokerClient, session: String?) async throws {
        let overlay = CommandOverlay(client: client)
        try await overlay.load(session: session ?? "")
        try overlay.show()
        try await overlay.end.wait()
    }

    private func load(session requested: String) async throws {
        guard case .commands(let shown) = try await client.request(.commands(.with {
            $0.sessionID = requested
            $0.overlay = true
        })) else { throw BrokerError.unexpectedReply }
        guard case .menu(let menu) = try await client.request(.menu(.with { $0.sessionID = shown.sessionID; $0.appID = shown.appID })) else {
            throw BrokerError.unexpectedReply
        }
        session = shown.sessionID
        if case .apps(let apps) = try await client.request(.apps(.init())), let app = apps.apps.first(where: { $0.id == shown.appID }), !app.name.isEmpty {
            heading = app.name
        } else {
            heading = shown.appID
        }
        let byID = Dictionary(shown.commands.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        func commands(in nodes: [Windowbroker_V1_MenuNode]) -> [Windowbroker_V1_MenuCommand] {
            nodes.flatMap { node -> [Windowbroker_V1_MenuCommand] in
                switch node.kind {
                case .command(let command): byID[command.id].map { [$0] } ?? []
                case .menu(let menu): commands(in: menu.children)
                case nil: []
                }
            }
        }
        for group in menu.menus {
            let inGroup = commands(in: group.children)
            guard !inGroup.isEmpty else { continue }
            lines.append(Line(id: nil, row: .init(title: group.title.uppercased(), shortcut: nil)))
            lines += inGroup.map { Line(id: $0.id, row: .init(title: $0.title, shortcut: Self.displayed($0.shortcut))) }
        }
        if lines.isEmpty {
            lines.append(Line(id: nil, row: .init(title: "No keyboard commands", shortcut: nil)))
        }
    }

    /// "ctrl+shift+u" as people read it: "Ctrl+Shift+U".
    static func displayed(_ shortcut: String) -> String {
        let names = ["ctrl": "Ctrl", "alt": "Alt", "shift": "Shift", "super": "Super", "grave": "`", "return": "Return",
                     "bracketleft": "[", "bracketright": "]", "comma": ",", "period": ".", "slash": "/", "minus": "-",
                     "equal": "=", "semicolon": ";", "apostrophe": "'", "backslash": "\\", "space": "Space"]
        return shortcut.split(separator: "+").map { part in
            let key = String(part)
            return names[key] ?? (key.count == 1 ? key.uppercased() : key.prefix(1).uppercased() + key.dropFirst())
        }.joined(separator: "+")
    }

    private func show() throws {
        let surface = try SystemSurface(namespace: "windowbroker-command-overlay", keyboard: false)
        self.surface = surface
        surface.onConfigure = { [weak self] _ in self?.draw() }
        surface.onPresented = { [weak self] _ in
            // Readiness reports once: the first frame on screen.
            guard let self, let surface = self.surface else { return }
            Readiness.reportShown(surface, ids: self.lines.map(\.id))
        }
        surface.onPointer = { [weak self] event in self?.pointer(event) }
        surface.onClosed = { [weak self] in self?.finish() }
        surface.onDisconnect = { [weak self] in self?.finish() }
    }

    private func draw() {
        surface?.drawRows(heading: heading, rows: lines.map(\.row), selected: hovered)
    }

    private func pointer(_ event: PointerEvent) {
        let row = surface?.item(at: event.location)
        switch event.kind {
        case .moved:
            if row != hovered {
                hovered = row
                draw()
            }
        case .down:
            break
        case .up:
            guard let row, let id = lines[row].id else { return }
            perform(id)
        }
    }

    private func perform(_ command: String) {
        surface?.close()
        surface = nil
        let client = self.client, session = self.session
        Task { @MainActor in
            do {
                _ = try await client.request(.key(.with {
                    $0.command = command
                    $0.sessionID = session
                }))
                self.finish()
            } catch {
                self.finish(throwing: error)
            }
        }
    }

    private func finish(throwing error: (any Error)? = nil) {
        surface?.close()
        surface = nil
        end.end(throwing: error)
    }
}
