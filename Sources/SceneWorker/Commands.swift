import IPCWire

/// A keyboard command (or main-menu item) reaching a responder.
public struct Command: Sendable, Equatable {
    /// The command's identifier from the app's menu (`notes.uppercase`, `edit.copy`).
    public var id: String
    /// The shortcut that was pressed, as key symbols (`ctrl+u`); nil when chosen from the menu.
    public var shortcut: String?
}

/// What `validate` may change before the command is shown (UIKit's `validate(_:)`).
public struct CommandValidation: Sendable, Equatable {
    public let id: String
    public var title: String
    public var state: State

    public enum State: String, Sendable { case off, on, mixed }
}

/// A link of the responder chain: a focused element, the scene's delegate, the app's delegate.
/// A command goes to the first responder from the focus outwards that `canPerform` it
/// (UIKit's `canPerformAction(_:withSender:)`); when none can, the system's command (close
/// window, next window, ...) runs, or the key is `unhandled`.
@MainActor
public protocol CommandResponder: AnyObject {
    func canPerform(_ command: Command, in scene: Scene) -> Bool
    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome
    /// Change the title or state before the command is shown (called on the responder that would perform it).
    func validate(_ command: inout CommandValidation, in scene: Scene)
}

extension CommandResponder {
    public func canPerform(_ command: Command, in scene: Scene) -> Bool { false }
    public func perform(_ command: Command, in scene: Scene) async -> ActionOutcome { .declined("not performed here") }
    public func validate(_ command: inout CommandValidation, in scene: Scene) {}
}

extension Scene {
    /// The chain for a command, innermost first: the focused element and its ancestors
    /// (`focusPath` prefixes that have a responder), then the scene, then the app.
    func responderChain(scene delegate: any SceneDelegate, app: any AppDelegate) -> [(level: String, element: String?, responder: any CommandResponder)] {
        var chain: [(String, String?, any CommandResponder)] = []
        for length in stride(from: focusPath.count, to: 0, by: -1) {
            let path = focusPath.prefix(length).joined(separator: "/")
            if let responder = elementResponders[path] { chain.append(("element", path, responder)) }
        }
        chain.append(("scene", nil, delegate))
        chain.append(("app", nil, app))
        return chain
    }
}
