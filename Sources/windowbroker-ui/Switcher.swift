#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import IPCWire
import SystemUISurface

/// The app switcher: one card per session with its snapshot, app and title, most recent
/// first. Arrows, Tab or the pointer choose; Return or a click brings the session back (the
/// broker restores it when it was reclaimed); Delete or dragging a card up closes the session;
/// Escape leaves. With an app: that app's sessions and a card for a new window.
@MainActor
final class Switcher {
    private struct Entry {
        var id: String
        var card: SystemSurface.Card
    }

    private let client: BrokerClient
    private let app: String?
    private var entries: [Entry] = []
    private var selected = 0
    private var heading = ""
    private var surface: SystemSurface?
    private var pressed: (index: Int, at: Point)?
    private let end = RunEnd()

    /// How far up a card is dragged to close its session.
    private static let closingDrag = 80.0
    private static let hint = "←↑↓→ choose · Return opens · Delete closes the session · Esc leaves"

    private init(client: BrokerClient, app: String?) {
        self.client = client
        self.app = app
    }

    static func run(client: BrokerClient, app: String?) async throws {
        let switcher = Switcher(client: client, app: app)
        try await switcher.load()
        try switcher.show()
        try await switcher.end.wait()
    }

    // MARK: - What it shows

    private func load() async throws {
        guard case .apps(let apps) = try await client.request(.apps(.init())) else { throw BrokerError.unexpectedReply }
        let names = Dictionary(apps.apps.map { ($0.id, $0.name.isEmpty ? $0.id : $0.name) }, uniquingKeysWith: { first, _ in first })
        if let app {
            guard let name = names[app] else {
                throw BrokerError(.unknownApp, "no app '\(app)' is installed (`wmctl apps` lists them)")
            }
            heading = "All Windows of \(name)"
        } else {
            heading = "Windows"
        }
        let sessions = try await client.allSessions(app: app ?? "").sorted { $0.lastActiveAt > $1.lastActiveAt }
        let thumbnails = await Self.thumbnails(of: sessions.filter(\.snapshotKept).map(\.id), from: client)
        for session in sessions {
            let picture = thumbnails[session.id].flatMap { SystemSurface.Picture(png: $0) }
            let title = session.title.isEmpty ? "Untitled" : session.title
            let detail = [app == nil ? names[session.appID] ?? session.appID : nil, Self.describe(session)].compactMap { $0 }.joined(separator: " · ")
            entries.append(Entry(id: session.id, card: .init(kind: .session, title: title, detail: detail, picture: picture)))
        }
        if app != nil {
            entries.append(Entry(id: SystemUIReport.newWindowItem, card: .init(kind: .newWindow, title: "New Window", detail: "opens another window of the app", picture: nil)))
        }
        // Like a window switcher: the key scene is where the user already is, so the card
        // after it is chosen first.
        if entries.count > 1, sessions.first?.key == true { selected = 1 }
        if entries.isEmpty { throw BrokerError(.invalidState, "there are no sessions to switch to (`wmctl open APP` opens one)") }
    }

    /// The sessions' thumbnails (PNG), asked for all at once: one round trip after another, 50
    /// sessions' took a third of the switcher's time to its first frame. A picture that cannot
    /// be had leaves its card without one.
    nonisolated private static func thumbnails(of ids: [String], from client: BrokerClient) async -> [String: Data] {
        await withTaskGroup(of: (String, Data?).self) { group in
            for id in ids {
                group.addTask {
                    guard case .snapshot(let snapshot)? = try? await client.request(.snapshot(.with {
                        $0.sessionID = id
                        $0.thumbnail = true
                    })) else { return (id, nil) }
                    return (id, snapshot.png)
                }
            }
            var found: [String: Data] = [:]
            for await (id, png) in group { found[id] = png }
            return found
        }
    }

    private static func describe(_ session: Windowbroker_V1_SessionInfo) -> String {
        switch SceneState(wire: session.state) {
        case .foregroundActive, .foregroundInactive: session.key ? "on screen, focused" : "on screen"
        case .background: "in the background"
        case .launching: "opening"
        case .unattached: session.restorationSaved ? "not running, comes back as it was" : "not running"
        }
    }

    // MARK: - The surface

    private func show() throws {
        let surface = try SystemSurface(namespace: "windowbroker-switcher", keyboard: true)
        self.surface = surface
        surface.onConfigure = { [weak self] _ in self?.draw() }
        surface.onPresented = { [weak self] _ in
            // Readiness reports once: the first frame on screen.
            guard let self, let surface = self.surface else { return }
            Readiness.reportShown(surface, ids: self.entries.map(\.id))
        }
        surface.onKey = { [weak self] key in self?.key(key) }
        surface.onPointer = { [weak self] event in self?.pointer(event) }
        surface.onClosed = { [weak self] in self?.finish() }
        surface.onDisconnect = { [weak self] in self?.finish() }
    }

    private func draw() {
        surface?.drawCards(heading: heading, hint: Self.hint, cards: entries.map(\.card), selected: selected)
    }

    // MARK: - Input

    /// Cards per row, as the last frame laid them out.
    private var columns: Int {
        guard let surface, let first = surface.frame(ofItem: 0) else { return 1 }
        return max(1, entries.indices.prefix { surface.frame(ofItem: $0)?.y == first.y }.count)
    }

    private func move(by step: Int) {
        let target = selected + step
        guard entries.indices.contains(target) else { return }
        selected = target
        draw()
    }

    private func key(_ key: KeyPress) {
        switch key.name {
        case "left": move(by: -1)
        case "right": move(by: 1)
        case "up": move(by: -columns)
        case "down": move(by: columns)
        case "tab", "iso_left_tab": move(by: key.modifiers.contains(.shift) ? -1 : 1)
        case "home": move(by: -selected)
        case "end": move(by: entries.count - 1 - selected)
        case "return", "kp_enter", "space": choose(selected)
        case "delete", "backspace": closeSession(at: selected)
        case "escape": finish()
        default: break
        }
    }

    private func pointer(_ event: PointerEvent) {
        switch event.kind {
        case .down:
            pressed = surface?.item(at: event.location).map { ($0, event.location) }
        case .moved:
            break
        case .up:
            defer { pressed = nil }
            guard let pressed else {
                // A click beside every card leaves, as a tap on the background does.
                if surface?.item(at: event.location) == nil { finish() }
                return
            }
            if pressed.at.y - event.location.y >= Self.closingDrag {
                closeSession(at: pressed.index)
            } else if surface?.item(at: event.location) == pressed.index {
                choose(pressed.index)
            }
        }
    }

    // MARK: - What the user chose

    private func choose(_ index: Int) {
        guard entries.indices.contains(index) else { return }
        let id = entries[index].id
        // The surface goes first: it holds the keyboard the chosen window is about to get.
        surface?.close()
        surface = nil
        let client = self.client, app = self.app
        Task { @MainActor in
            do {
                if id == SystemUIReport.newWindowItem, let app {
                    _ = try await client.request(.open(.with {
                        $0.appID = app
                        $0.forceNew = true
                    }))
                } else {
                    _ = try await client.request(.activate(.with { $0.sessionID = id }))
                }
                self.finish()
            } catch {
                self.finish(throwing: error)
            }
        }
    }

    private func closeSession(at index: Int) {
        guard entries.indices.contains(index), entries[index].card.kind == .session else { return }
        let id = entries[index].id
        let client = self.client
        Task { @MainActor in
            do {
                _ = try await client.request(.close(.with { $0.sessionID = id }))
            } catch {
                PlainOutput.write("windowbroker-ui: closing \(id): \((error as? BrokerError)?.message ?? "\(error)")\n", to: STDERR_FILENO)
                return
            }
            guard let at = self.entries.firstIndex(where: { $0.id == id }) else { return }
            self.entries.remove(at: at)
            if !self.entries.contains(where: { $0.card.kind == .session }) && self.app == nil {
                self.finish()
                return
            }
            self.selected = min(self.selected, self.entries.count - 1)
            self.draw()
        }
    }

    private func finish(throwing error: (any Error)? = nil) {
        surface?.close()
        surface = nil
        end.end(throwing: error)
    }
}
