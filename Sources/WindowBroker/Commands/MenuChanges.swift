import Foundation
import IPCWire

/// One change a scene makes to its app's main menu at runtime.
public enum MenuOperation: Sendable, Equatable {
    case insert(MenuInsertion)
    case remove(String)

    /// Reads an operation from the wire, checking what the manifest loader checks.
    package init(wire: Windowbroker_V1_MenuOperation) throws(BrokerError) {
        switch wire.kind {
        case .insert(let insert):
            let placement: MenuPlacement
            switch (insert.childOf.isEmpty, insert.siblingOf.isEmpty) {
            case (false, true): placement = .child(of: insert.childOf, atStart: insert.atStart)
            case (true, false): placement = .sibling(of: insert.siblingOf, before: insert.before)
            default: throw BrokerError(.invalidRequest, "a menu insertion names either the menu it goes into or the element it goes beside")
            }
            self = .insert(MenuInsertion(element: try MenuElement(wire: insert.element), placement: placement))
        case .remove(let id):
            self = .remove(id)
        case nil:
            throw BrokerError(.invalidRequest, "an empty menu operation")
        }
    }
}

extension MenuElement {
    init(wire: Windowbroker_V1_MenuNode, depth: Int = 0) throws(BrokerError) {
        guard depth < 8 else { throw BrokerError(.invalidRequest, "menus nest at most 8 deep") }
        func check(_ id: String, _ title: String) throws(BrokerError) {
            guard !id.isEmpty, id.utf8.count <= 128 else { throw BrokerError(.invalidRequest, "a menu element needs an id (1 to 128 bytes)") }
            guard !title.isEmpty, title.count <= 256 else { throw BrokerError(.invalidRequest, "'\(id)' needs a title (1 to 256 characters)") }
        }
        switch wire.kind {
        case .menu(let menu):
            try check(menu.id, menu.title)
            var children: [MenuElement] = []
            for child in menu.children { children.append(try MenuElement(wire: child, depth: depth + 1)) }
            self = .menu(Menu(id: menu.id, title: menu.title, children: children))
        case .command(let command):
            try check(command.id, command.title)
            var attributes: Set<MenuCommand.Attribute> = []
            for name in command.attributes {
                guard let attribute = MenuCommand.Attribute(rawValue: name) else {
                    throw BrokerError(.invalidRequest, "'\(command.id)': '\(name)' is not an attribute (destructive, hidden, disabled)")
                }
                attributes.insert(attribute)
            }
            self = .command(MenuCommand(
                id: command.id, title: command.title,
                discoverabilityTitle: command.discoverabilityTitle.isEmpty ? nil : command.discoverabilityTitle,
                shortcut: command.shortcut.isEmpty ? nil : try KeyShortcut(parsing: command.shortcut),
                attributes: attributes, allowsAutomaticMirroring: !command.noAutomaticMirroring))
        case nil:
            throw BrokerError(.invalidRequest, "an empty menu element")
        }
    }
}

extension MainMenu {
    /// Applies a batch whole or not at all.
    func applying(_ operations: [MenuOperation]) throws(MenuError) -> MainMenu {
        var menu = self
        for operation in operations {
            switch operation {
            case .insert(let insertion): try menu.insert(insertion.element, at: insertion.placement, allowingIdentical: true)
            case .remove(let id): try menu.remove(id: id)
            }
        }
        return menu
    }
}

extension Broker {
    /// A scene's runtime change to its app's main menu: checked like the manifest's (unique
    /// ids and shortcuts, the system's shortcuts reserved), applied whole or refused whole.
    /// The change lasts while the broker runs; every process of the app builds it again at
    /// launch (`AppDelegate.buildMenu`), so identical insertions are accepted as no-ops.
    package func changeMenu(app: AppID, operations wire: [Windowbroker_V1_MenuOperation]) throws(BrokerError) -> MainMenu {
        guard wire.count <= 256 else { throw BrokerError(.invalidRequest, "at most 256 menu operations at once") }
        var operations: [MenuOperation] = []
        for operation in wire { operations.append(try MenuOperation(wire: operation)) }
        guard (apps.runtimeMenus[app]?.operations.count ?? 0) + operations.count <= 1024 else {
            throw BrokerError(.resourceExhausted, "app '\(app)' has made 1024 menu changes while this broker runs; that is the limit")
        }
        let current = try apps.mainMenu(app)
        let changed: MainMenu
        do {
            changed = try current.applying(operations)
        } catch {
            throw BrokerError(.invalidRequest, "menu change refused, nothing changed: \(error)")
        }
        // Every process of the app sends the same insertions at launch: one that changes nothing
        // is not recorded, or a broker that ran 1,024 scenes would refuse the next one's menu.
        guard changed != current else { return changed }
        apps.runtimeMenus[app] = .init(operations: (apps.runtimeMenus[app]?.operations ?? []) + operations, menu: changed)
        return changed
    }

    /// After the manifests were read again: the runtime changes on top of the new manifest
    /// menu; changes that no longer fit are dropped with a warning.
    func reapplyRuntimeMenus() {
        for (app, runtime) in apps.runtimeMenus {
            guard var menu = apps.manifests[app]?.mainMenu else {
                apps.runtimeMenus[app] = nil
                continue
            }
            var kept: [MenuOperation] = []
            for operation in runtime.operations {
                if let next = try? menu.applying([operation]) {
                    menu = next
                    kept.append(operation)
                } else {
                    logger.warning("app menu: a runtime change no longer fits the reloaded manifest; dropped", metadata: ["app": "\(app)"])
                }
            }
            apps.runtimeMenus[app] = .init(operations: kept, menu: menu)
        }
    }
}
