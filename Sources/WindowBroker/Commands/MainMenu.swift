import Foundation
import IPCWire

/// What the system does for a command when no responder in the scene performs it.
public enum SystemAction: String, Sendable, Equatable {
    /// Opens a new scene of the app.
    case newWindow
    /// Closes (discards) the scene the key went to.
    case closeWindow
    /// Activates the app's next / previous session (by creation order, wrapping).
    case nextWindow, previousWindow
    /// Answers the app's sessions, as the switcher shows them.
    case showAppSwitcher
}

public struct MenuCommand: Sendable, Equatable {
    public enum Attribute: String, Sendable, CaseIterable { case destructive, hidden, disabled }

    public var id: String
    public var title: String
    public var discoverabilityTitle: String?
    public var shortcut: KeyShortcut?
    public var attributes: Set<Attribute> = []
    public var allowsAutomaticMirroring = true
    /// Set for the system's commands: what the broker does when no responder does.
    public var systemAction: SystemAction?
    public var isSystem = false

    public init(id: String, title: String, discoverabilityTitle: String? = nil, shortcut: KeyShortcut? = nil,
                attributes: Set<Attribute> = [], allowsAutomaticMirroring: Bool = true) {
        self.id = id
        self.title = title
        self.discoverabilityTitle = discoverabilityTitle
        self.shortcut = shortcut
        self.attributes = attributes
        self.allowsAutomaticMirroring = allowsAutomaticMirroring
    }
}

public struct Menu: Sendable, Equatable {
    public var id: String
    public var title: String
    public var children: [MenuElement] = []

    public init(id: String, title: String, children: [MenuElement] = []) {
        self.id = id
        self.title = title
        self.children = children
    }
}

public indirect enum MenuElement: Sendable, Equatable {
    case menu(Menu)
    case command(MenuCommand)

    public var id: String {
        switch self {
        case .menu(let menu): menu.id
        case .command(let command): command.id
        }
    }

    /// This element's id and every id inside it.
    var allIDs: [String] {
        switch self {
        case .command(let command): [command.id]
        case .menu(let menu): [menu.id] + menu.children.flatMap(\.allIDs)
        }
    }

    var allCommands: [MenuCommand] {
        switch self {
        case .command(let command): [command]
        case .menu(let menu): menu.children.flatMap(\.allCommands)
        }
    }

    var isMenu: Bool {
        if case .menu = self { return true }
        return false
    }

    var describedForError: String {
        switch self {
        case .menu(let menu): "the menu '\(menu.id)' (\(menu.title))"
        case .command(let command): "the command '\(command.id)' (\(command.title))"
        }
    }
}

/// Where an insertion goes (`UIMenuBuilder`'s insertChild / insertSibling).
public enum MenuPlacement: Sendable, Equatable {
    case child(of: String, atStart: Bool)
    case sibling(of: String, before: Bool)
}

/// An insertion refused as a whole, naming both sides of a collision.
public struct MenuError: Error, Sendable, Equatable, CustomStringConvertible {
    public var element: String
    public var reason: String
    public var description: String { "'\(element)': \(reason)" }
}

/// One app's main menu: the system's menus and commands, and what the app inserted. Every
/// element has a unique identifier and a shortcut belongs to one command; an insertion that
/// would break either is refused as a whole. Pure: the broker builds it from a manifest and
/// runtime changes, tests drive it directly.
public struct MainMenu: Sendable, Equatable {
    public private(set) var menus: [Menu]

    /// The system's menus (`application`, `file`, `edit`, `view`, `window`, `help`) and
    /// commands, with the reserved shortcuts docs/LIFECYCLE.md lists.
    public static let system: MainMenu = {
        func command(_ id: String, _ title: String, _ shortcut: String, _ action: SystemAction? = nil) -> MenuElement {
            var command = MenuCommand(id: id, title: title, shortcut: try! KeyShortcut(parsing: shortcut))
            command.systemAction = action
            command.isSystem = true
            return .command(command)
        }
        return MainMenu(menus: [
            Menu(id: "application", title: "Application"),
            Menu(id: "file", title: "File", children: [
                command("file.newWindow", "New Window", "ctrl+n", .newWindow),
                command("file.closeWindow", "Close Window", "ctrl+w", .closeWindow),
            ]),
            Menu(id: "edit", title: "Edit", children: [
                command("edit.undo", "Undo", "ctrl+z"),
                command("edit.redo", "Redo", "ctrl+shift+z"),
                command("edit.cut", "Cut", "ctrl+x"),
                command("edit.copy", "Copy", "ctrl+c"),
                command("edit.paste", "Paste", "ctrl+v"),
                command("edit.selectAll", "Select All", "ctrl+a"),
            ]),
            Menu(id: "view", title: "View"),
            Menu(id: "window", title: "Window", children: [
                command("window.next", "Next Window", "alt+grave", .nextWindow),
                command("window.previous", "Previous Window", "alt+shift+grave", .previousWindow),
                command("window.showAppSwitcher", "Show All Windows", "super+grave", .showAppSwitcher),
            ]),
            Menu(id: "help", title: "Help"),
        ])
    }()

    init(menus: [Menu]) {
        self.menus = menus
    }

    public var commands: [MenuCommand] { menus.flatMap { MenuElement.menu($0).allCommands } }

    public func command(id: String) -> MenuCommand? { commands.first { $0.id == id } }

    public func command(for shortcut: KeyShortcut) -> MenuCommand? { commands.first { $0.shortcut == shortcut } }

    private func element(id: String) -> MenuElement? {
        func search(_ elements: [MenuElement]) -> MenuElement? {
            for element in elements {
                if element.id == id { return element }
                if case .menu(let menu) = element, let found = search(menu.children) { return found }
            }
            return nil
        }
        return search(menus.map { .menu($0) })
    }

    /// Inserts an element (a command, or a menu with what it holds), or refuses it whole.
    /// With `allowingIdentical`, inserting an element exactly like one already there is a
    /// no-op (each process of an app builds the same runtime menu at launch).
    public mutating func insert(_ element: MenuElement, at placement: MenuPlacement, allowingIdentical: Bool = false) throws(MenuError) {
        if allowingIdentical, self.element(id: element.id) == element { return }
        let ids = element.allIDs
        if let repeated = Set(ids.filter { id in ids.filter { $0 == id }.count > 1 }).first {
            throw MenuError(element: element.id, reason: "declares the id '\(repeated)' twice")
        }
        for id in ids {
            if let existing = self.element(id: id) {
                throw MenuError(element: element.id, reason: "the id '\(id)' is already used by \(existing.describedForError)")
            }
        }
        var shortcuts: [KeyShortcut: String] = [:]
        for command in element.allCommands {
            guard let shortcut = command.shortcut else { continue }
            if let owner = self.command(for: shortcut) {
                throw MenuError(element: command.id, reason: "\(shortcut) already belongs to \(owner.isSystem ? "the system command" : "the command") '\(owner.id)' (\(owner.title))")
            }
            if let other = shortcuts.updateValue(command.id, forKey: shortcut) {
                throw MenuError(element: command.id, reason: "\(shortcut) is also given to '\(other)' in the same insertion")
            }
        }
        let target: String
        switch placement {
        case .child(let menu, _): target = menu
        case .sibling(let sibling, _): target = sibling
        }
        // Top-level: a sibling of a top-level menu must itself be a menu.
        if case .sibling(let sibling, let before) = placement, let index = menus.firstIndex(where: { $0.id == sibling }) {
            guard case .menu(let menu) = element else {
                throw MenuError(element: element.id, reason: "only a menu can stand beside the top-level menu '\(sibling)'")
            }
            menus.insert(menu, at: before ? index : index + 1)
            return
        }
        var inserted = false
        func place(in elements: inout [MenuElement]) {
            for index in elements.indices where !inserted {
                switch placement {
                case .sibling(let sibling, let before) where elements[index].id == sibling:
                    elements.insert(element, at: before ? index : index + 1)
                    inserted = true
                    return
                case .child(let menuID, let atStart):
                    if case .menu(var menu) = elements[index] {
                        if menu.id == menuID {
                            if atStart { menu.children.insert(element, at: 0) } else { menu.children.append(element) }
                            inserted = true
                        } else {
                            place(in: &menu.children)
                        }
                        elements[index] = .menu(menu)
                    }
                case .sibling:
                    if case .menu(var menu) = elements[index] {
                        place(in: &menu.children)
                        elements[index] = .menu(menu)
                    }
                }
            }
        }
        var top = menus.map { MenuElement.menu($0) }
        place(in: &top)
        guard inserted else {
            if case .child = placement, let existing = self.element(id: target), case .command = existing {
                throw MenuError(element: element.id, reason: "'\(target)' is a command, not a menu; insert beside it instead")
            }
            throw MenuError(element: element.id, reason: "there is no menu or command '\(target)' to insert \(placementText(placement))")
        }
        menus = top.compactMap { if case .menu(let menu) = $0 { menu } else { nil } }
    }

    private func placementText(_ placement: MenuPlacement) -> String {
        switch placement {
        case .child(let menu, let atStart): "at the \(atStart ? "start" : "end") of '\(menu)'"
        case .sibling(let sibling, let before): "\(before ? "before" : "after") '\(sibling)'"
        }
    }

    /// Removes an element the app inserted; the system's are not the app's to remove.
    public mutating func remove(id: String) throws(MenuError) {
        guard let existing = element(id: id) else { throw MenuError(element: id, reason: "no such menu or command") }
        if MainMenu.system.element(id: id) != nil || existing.allCommands.contains(where: \.isSystem) {
            throw MenuError(element: id, reason: "belongs to the system menu and cannot be removed")
        }
        func drop(_ elements: [MenuElement]) -> [MenuElement] {
            elements.compactMap { element in
                if element.id == id { return nil }
                if case .menu(var menu) = element {
                    menu.children = drop(menu.children)
                    return .menu(menu)
                }
                return element
            }
        }
        menus = drop(menus.map { .menu($0) }).compactMap { if case .menu(let menu) = $0 { menu } else { nil } }
    }
}

/// A menu or command an app declares (in its manifest or at runtime) and where it goes.
public struct MenuInsertion: Sendable, Equatable {
    public var element: MenuElement
    public var placement: MenuPlacement

    public init(element: MenuElement, placement: MenuPlacement) {
        self.element = element
        self.placement = placement
    }
}

extension MainMenu {
    /// The system menu with the app's insertions applied in order; the ones refused are
    /// reported and the rest still load.
    public static func build(_ insertions: [MenuInsertion]) -> (MainMenu, [MenuError]) {
        var menu = MainMenu.system
        var errors: [MenuError] = []
        for insertion in insertions {
            do { try menu.insert(insertion.element, at: insertion.placement) } catch { errors.append(error) }
        }
        return (menu, errors)
    }
}
