import CGtk
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// The scene's window as the runtime drives it: made before willConnect, shown and hidden with
/// the scene's lifecycle, its picture kept for the switcher, the compositor's keyboard focus
/// and the main menu's shortcuts reported. It owns everything about the window; what it may
/// ask of the broker comes in its `Outlet`. Headless it holds no window and every call is a
/// no-op.
@MainActor
final class SceneWindowHost {
    /// What the window tells the broker and asks of it.
    struct Outlet {
        /// A message the broker takes unasked (close requested, keyboard focus, the window's handle).
        var send: @MainActor (Windowbroker_V1_WorkerMessage.OneOf_Kind) -> Void
        /// A control request (the app's commands, the command overlay).
        var request: @MainActor @Sendable (ControlRequest) async throws -> ControlReply
        /// A shortcut for the broker to perform through the responder chain (`wmctl key`).
        var performShortcut: @MainActor (KeyShortcut) async -> Void
    }

    private let outlet: Outlet
    private(set) var window: SceneGtkWindow?
    /// The command overlay while the command key is held over the window.
    private var commandKeyHold: CommandKeyHold?
    /// The picture taken as the window went to the background (or was dimmed): the switcher's card.
    private var lastSnapshot: WindowSnapshot?
    /// Shortcuts pressed in the window, performed in order by `performShortcuts`.
    private let shortcuts = MainActorQueue<KeyShortcut>()
    private weak var scene: Scene?
    private var delegate: () -> (any SceneDelegate)? = { nil }

    init(outlet: Outlet) {
        self.outlet = outlet
    }

    /// With a display the scene has a GTK window from before willConnect (the app fills
    /// `scene.window`): app id = the app's, title = the scene's. Headless there is none.
    func make(for scene: Scene, delegate: @escaping () -> (any SceneDelegate)?) {
        guard window == nil, GtkMainLoop.isRunning else { return }
        self.scene = scene
        self.delegate = delegate
        let made = SceneGtkWindow(title: scene.title)
        let send = outlet.send
        made.onCloseRequest = {
            // Closing a window disconnects its scene (state saved first, session kept): the
            // broker decides and drives it; the window goes with the didEnterBackground.
            send(.closeRequested(.init()))
        }
        made.onActiveChanged = { [weak self] active in self?.activeChanged(active) }
        made.onSizeChanged = { [weak self] size in  // only when it changed
            guard let self, let scene = self.scene, let delegate = self.delegate() else { return }
            scene.windowSize = size
            delegate.sizeDidChange(scene, to: size)
        }
        let request = outlet.request
        let hold = CommandKeyHold(environment: ProcessInfo.processInfo.environment, delay: .milliseconds(500)) { _ = try await request($0) }
        commandKeyHold = hold
        made.onKey = { hold.keyPressed() }
        made.onShortcut = { [weak self] name in self?.shortcutPressed(name) ?? false }
        made.onModifiers = { held in hold.modifiersChanged(held) }
        made.onExported = { handle in send(.windowExported(.with { $0.handle = handle })) }
        made.onDone = { [weak scene] in
            // Done: the prominent scene asks for its own dismissal (the broker answers after
            // it has been told to disconnect, so nothing waits for the answer).
            guard let scene else { return }
            let id = scene.session.id
            Task { try? await scene.requestDestruction(session: id) }
        }
        // The compositor went away: the broker saves the scene and puts it back when one is there.
        GtkMainLoop.watchDisplayLoss { send(.displayLost(.init())) }
        window = made
        scene.window = made.window
        scene.windowTitleChanged = { [weak made] title in made?.setTitle(title) }
    }

    /// Restored on its way to the front: the picture the scene left is on screen while it restores.
    func showPlaceholder(_ png: Data) {
        guard !png.isEmpty, let window, !GtkMainLoop.displayIsGone, window.showPlaceholder(png: png) else { return }
        window.show()
    }

    /// willEnterForeground: a prominent scene's window becomes a sheet over the window it was
    /// asked from, with a Done button; then it is mapped.
    func enterForeground(_ transition: Windowbroker_V1_LifecycleTransition) {
        guard let window, !GtkMainLoop.displayIsGone else { return }
        if !transition.parentWindowHandle.isEmpty { window.setParent(exportedAs: transition.parentWindowHandle) }
        window.showDoneButton(transition.prominent)
        show()
    }

    /// The window is mapped (the live widgets replace a placeholder), and the main menu's
    /// shortcuts are asked for (they may have changed while it was away).
    private func show() {
        guard let window, !GtkMainLoop.displayIsGone else { return }
        if window.showsPlaceholder {
            // Restored: the live widgets replace the picture, and the keyboard counts from now.
            window.removePlaceholder()
            if window.isActivated != scene?.isKey { activeChanged(window.isActivated) }
        } else if window.isVisible {
            return
        } else {
            window.show()
        }
        loadShortcuts()
    }

    /// The scene goes to the background (or disconnects): the window's picture is kept for the
    /// switcher, then the window is unmapped.
    func hide() {
        guard let window, window.isVisible else { return }
        // A dimmed window's picture was taken as it was dimmed (the switcher shows it undimmed).
        if !window.isDimmed, let snapshot = window.snapshot() { lastSnapshot = snapshot }
        window.setDimmed(false)
        commandKeyHold?.windowClosed()
        window.hide()
        guard let scene else { return }
        scene.windowSize = nil
        if scene.isKey, let delegate = delegate() {
            scene.isKey = false
            delegate.didResignKey(scene)
        }
    }

    /// The scene disconnected: the window goes.
    func destroy() {
        hide()
        window?.destroy()
        window = nil
        scene?.window = nil
    }

    /// The picture for the restoration activity: the window as it is when it is on screen,
    /// else as it was when it went to the background. Headless: none (there is no switcher).
    func snapshot() -> WindowSnapshot? {
        if let window, window.isVisible, !window.isDimmed, let live = window.snapshot() { lastSnapshot = live }
        return lastSnapshot
    }

    /// After a command's transitions: a window on screen whose scene is inactive (behind a
    /// prominent scene of its app) is dimmed and takes no input; its picture is taken first.
    /// Decided on the state the command leaves, so that one passing through on its way to the
    /// background (willResignActive, then didEnterBackground) is never dimmed: a style change
    /// leaves GTK nothing to draw until its next layout, and the picture is taken right then.
    func updateDimming() {
        guard let window, let scene, window.isVisible, !window.showsPlaceholder else { return }
        let dimmed = scene.state == .foregroundInactive
        if dimmed, !window.isDimmed, let snapshot = window.snapshot() { lastSnapshot = snapshot }
        window.setDimmed(dimmed)
    }

    /// The broker made the scene the key scene: with a window the compositor decides, so the
    /// window asks it for the keyboard, with the requester's token when there is one; what it
    /// asked and whether it has the keyboard is the answer. Nil headless (the runtime tells the
    /// delegate itself).
    func keyStatus(isKey: Bool, token: String) -> Windowbroker_V1_KeyStatusReply? {
        guard let window, !GtkMainLoop.displayIsGone else { return nil }
        let hasKeyboard = scene?.isKey == true
        let asked = isKey && !hasKeyboard && window.isVisible && window.activate(token: token)
        return .with {
            $0.asked = asked
            $0.keyboardFocused = hasKeyboard
        }
    }

    /// The compositor moved the keyboard: the broker's key scene follows it.
    private func activeChanged(_ active: Bool) {
        guard let scene, let delegate = delegate(), active != scene.isKey,
              window?.isVisible == true || !active, window?.showsPlaceholder != true else { return }
        scene.isKey = active
        if active { delegate.didBecomeKey(scene) } else { delegate.didResignKey(scene) }
        outlet.send(.keyboardFocus(.with { $0.focused = active }))
    }

    private func loadShortcuts() {
        guard let scene else { return }
        // The app's menu, not the session's: no round trip back here to validate each command.
        let request = ControlRequest.commands(.with { $0.appID = scene.session.appID.rawValue })
        let ask = outlet.request
        Task { [weak self] in
            do {
                guard case .commands(let commands) = try await ask(request) else { return }
                self?.window?.setShortcuts(Array(Set(commands.commands.map(\.shortcut).filter { !$0.isEmpty })).sorted())
            } catch {
                var standardError = StandardError()
                print("scene worker: the main menu's shortcuts are unknown, keys go to the window: \((error as? BrokerError)?.message ?? "\(error)")", to: &standardError)
            }
        }
    }

    /// A shortcut of the app's main menu pressed in the window, before any widget: the broker
    /// performs it. The text widgets' own editing keys (copy, paste, select all, undo) stay
    /// theirs while one has the focus, so that they reach the Wayland clipboard.
    private func shortcutPressed(_ name: String) -> Bool {
        guard let shortcut = try? KeyShortcut(parsing: name) else { return false }
        if Self.textEditingShortcuts.contains(shortcut.description), let window,
           wb_widget_edits_text(gtk_window_get_focus(window.window)) != 0 {
            return false
        }
        shortcuts.yield(shortcut)
        return true
    }

    /// The system's Edit commands that a focused text widget performs itself.
    private static let textEditingShortcuts: Set<String> = ["ctrl+c", "ctrl+v", "ctrl+x", "ctrl+a", "ctrl+z", "ctrl+shift+z"]

    /// Shortcuts from the window, one at a time in the order pressed: each waits for the
    /// command it performs before the next. Returns once `finish` was called.
    func performShortcuts() async {
        while let shortcut = await shortcuts.next() {
            await outlet.performShortcut(shortcut)
        }
    }

    func finish() {
        shortcuts.finish()
    }
}
