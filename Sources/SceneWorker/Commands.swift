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
    /// The command's identifier.
    public let id: String
    /// The title the menu and the shortcut overlay show; change it to suit the moment (`Pin Note`, `Unpin Note`).
    public var title: String
    /// The check mark the menu shows beside the command.
    public var state: State

    /// A command's check mark: none, a check, or a dash for a mixed selection.
    public enum State: String, Sendable {
        /// No mark.
        case off
        /// A check mark.
        case on
        /// A dash: the selection is partly on.
        case mixed
    }
}

/// A link of the responder chain: a focused element, the scene's delegate, the app's delegate.
/// A command goes to the first responder from the focus outwards that `canPerform` it
/// (UIKit's `canPerformAction(_:withSender:)`); when none can, the system's command (close
/// window, next window, ...) runs, or the key is `unhandled`.
@MainActor
public protocol CommandResponder: AnyObject {
    /// Whether this responder performs the command now. The first responder from the focus outwards
    /// that answers true gets ``perform(_:in:)``; when none does, the command is unavailable.
    func canPerform(_ command: Command, in scene: Scene) -> Bool
    /// Performs the command; what it returns goes back to whoever pressed the key (`wmctl key`).
    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome
    /// Change the title or state before the command is shown (called on the responder that would perform it).
    func validate(_ command: inout CommandValidation, in scene: Scene)
}

extension CommandResponder {
    /// Performs nothing: a responder opts in per command.
    public func canPerform(_ command: Command, in scene: Scene) -> Bool { false }
    /// Declines: only called when ``canPerform(_:in:)`` said yes.
    public func perform(_ command: Command, in scene: Scene) async -> ActionOutcome { .declined("not performed here") }
    /// Leaves the title and state as declared.
    public func validate(_ command: inout CommandValidation, in scene: Scene) {}
}

extension Scene {
    /// The chain for a command, innermost first: the focused element and its ancestors
    /// (`focusPath` prefixes that have a responder), then the scene, then the app.
    func responderChain(scene delegate: any SceneDelegate, app: any AppDelegate) -> [(level: Responder, element: String?, responder: any CommandResponder)] {
        var chain: [(Responder, String?, any CommandResponder)] = []
        for length in stride(from: focusPath.count, to: 0, by: -1) {
            let path = focusPath.prefix(length).joined(separator: "/")
            if let responder = elementResponders[path] { chain.append((.element, path, responder)) }
        }
        chain.append((.scene, nil, delegate))
        chain.append((.app, nil, app))
        return chain
    }
}

/// A menu or command an app inserts at runtime.
public indirect enum MenuItem: Sendable, Equatable {
    /// A command: its id, title, optional overlay title and shortcut (key symbols, `ctrl+shift+u`),
    /// attributes (`destructive`, `hidden`, ...) and whether right-to-left layouts may mirror its keys.
    case command(id: String, title: String, discoverabilityTitle: String? = nil, shortcut: String? = nil,
                 attributes: [String] = [], allowsAutomaticMirroring: Bool = true)
    /// A submenu and what it holds.
    case menu(id: String, title: String, children: [MenuItem] = [])

    var wire: Windowbroker_V1_MenuNode {
        .with {
            switch self {
            case .command(let id, let title, let discoverabilityTitle, let shortcut, let attributes, let mirroring):
                $0.command = .with {
                    $0.id = id
                    $0.title = title
                    $0.discoverabilityTitle = discoverabilityTitle ?? ""
                    $0.shortcut = shortcut ?? ""
                    $0.attributes = attributes
                    $0.noAutomaticMirroring = !mirroring
                }
            case .menu(let id, let title, let children):
                $0.menu = .with {
                    $0.id = id
                    $0.title = title
                    $0.children = children.map(\.wire)
                }
            }
        }
    }
}

/// Collects changes to the app's main menu (`UIMenuBuilder`): `insertChild` into a menu at
/// its start or end, `insertSibling` before or after an element, `remove`. The broker checks
/// them like the manifest's and applies the batch whole or not at all.
public struct MenuBuilder: Sendable {
    var operations: [Windowbroker_V1_MenuOperation] = []

    /// An empty batch of changes.
    public init() {}

    /// The batch as the SDK sends it. Only a refusal of it is read, so the broker's answer
    /// leaves the app's whole menu out (the costliest thing it encoded for a launch).
    var request: Windowbroker_V1_MenuChangeRequest {
        .with {
            $0.operations = operations
            $0.omitMenu = true
        }
    }

    /// Inserts an item as the first child of a menu (by id, e.g. `edit`).
    public mutating func insertChild(_ item: MenuItem, atStartOf menu: String) {
        add(item) { $0.childOf = menu; $0.atStart = true }
    }

    /// Inserts an item as the last child of a menu (by id, e.g. `view`).
    public mutating func insertChild(_ item: MenuItem, atEndOf menu: String) {
        add(item) { $0.childOf = menu }
    }

    /// Inserts an item just before a command or menu (by id).
    public mutating func insertSibling(_ item: MenuItem, before element: String) {
        add(item) { $0.siblingOf = element; $0.before = true }
    }

    /// Inserts an item just after a command or menu (by id).
    public mutating func insertSibling(_ item: MenuItem, after element: String) {
        add(item) { $0.siblingOf = element }
    }

    /// Removes an element the app inserted (the system's stay).
    public mutating func remove(_ element: String) {
        operations.append(.with { $0.remove = element })
    }

    private mutating func add(_ item: MenuItem, _ place: (inout Windowbroker_V1_MenuInsert) -> Void) {
        var insert = Windowbroker_V1_MenuInsert.with { $0.element = item.wire }
        place(&insert)
        operations.append(.with { $0.insert = insert })
    }
}

extension Scene {
    /// Changes the app's main menu now. Throws the broker's `invalidRequest` naming both sides
    /// of a collision (an id or a shortcut already taken, by the app or the system), and then
    /// nothing has changed.
    public func changeMenu(_ build: (inout MenuBuilder) -> Void) async throws {
        var builder = MenuBuilder()
        build(&builder)
        guard !builder.operations.isEmpty else { return }
        try await sendMenuChange(builder.request)
    }
}
