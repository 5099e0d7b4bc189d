#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// Holding the command key alone over a scene's window shows its app's commands (the command
/// overlay, as iPadOS shows it while ⌘ is held); releasing it hides them. A key typed before
/// the overlay appears was a shortcut, and no overlay comes. The broker shows the overlay
/// (a system surface that leaves the keyboard with the window, so shortcuts still work).
@MainActor
final class CommandKeyHold {
    /// The modifier that shows the overlay; nil: never (WINDOWBROKER_COMMAND_KEY=none).
    let key: KeyModifiers?
    /// How long the key is held alone before the overlay appears.
    let delay: Duration
    private let request: @MainActor @Sendable (ControlRequest) async throws -> Void
    private var pending: Task<Void, Never>?
    private var shown = false

    init(environment: [String: String], delay: Duration,
         request: @escaping @MainActor @Sendable (ControlRequest) async throws -> Void) {
        key = switch environment["WINDOWBROKER_COMMAND_KEY"] ?? "super" {
        case "ctrl": .ctrl
        case "alt": .alt
        case "none", "off": nil
        default: .super
        }
        self.delay = delay
        self.request = request
    }

    func modifiersChanged(_ held: KeyModifiers) {
        guard let key else { return }
        if held == key {
            guard pending == nil, !shown else { return }
            let delay = self.delay
            pending = Task { [weak self] in
                guard (try? await WireRuntime.sleep(for: delay)) != nil else { return }
                self?.show()
            }
        } else if !held.contains(key) {
            pending?.cancel()
            pending = nil
            if shown { hide() }
        }
    }

    /// A key went down: with the command key held, that was a shortcut.
    func keyPressed() {
        pending?.cancel()
        pending = nil
    }

    /// The window is gone: so is what it showed.
    func windowClosed() {
        keyPressed()
        if shown { hide() }
    }

    private func show() {
        pending = nil
        shown = true
        let request = self.request
        Task {
            do {
                try await request(.systemUi(.with { $0.surface = .commandOverlay }))
            } catch {
                var standardError = StandardError()
                print("scene worker: no command overlay: \((error as? BrokerError)?.message ?? "\(error)")", to: &standardError)
            }
        }
    }

    private func hide() {
        shown = false
        let request = self.request
        Task { try? await request(.systemUi(.with { $0.hide = true })) }
    }
}
