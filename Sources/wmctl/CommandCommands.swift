import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// One command as JSON: `enabled` and `handler` are what the scene answered (null: no scene asked).
private func describe(_ command: Windowbroker_V1_MenuCommand, validated: Bool) -> PlistValue {
    .dictionary([
        "id": .string(command.id),
        "title": .string(command.title),
        "discoverabilityTitle": command.discoverabilityTitle.isEmpty ? .null : .string(command.discoverabilityTitle),
        "shortcut": command.shortcut.isEmpty ? .null : .string(command.shortcut),
        "attributes": .list(command.attributes.map { .string($0) }),
        "enabled": .bool(command.enabled),
        "handler": validated && !command.handler.isEmpty ? .string(command.handler) : (command.system && !validated ? .string("system") : .null),
        "state": validated ? .string(command.state.isEmpty ? "off" : command.state) : .null,
        "allowsAutomaticMirroring": .bool(!command.noAutomaticMirroring),
        "system": .bool(command.system),
    ])
}

private func describe(_ menu: Windowbroker_V1_Menu, validated: Bool) -> PlistValue {
    .dictionary([
        "id": .string(menu.id),
        "title": .string(menu.title),
        "children": .list(menu.children.compactMap { node in
            switch node.kind {
            case .menu(let submenu): describe(submenu, validated: validated)
            case .command(let command): describe(command, validated: validated)
            case nil: nil
            }
        }),
    ])
}

struct Menu: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "menu",
        abstract: "The main menu of a scene's app (show, the default) or one of its commands performed (invoke).",
        subcommands: [MenuShow.self, MenuInvoke.self], defaultSubcommand: MenuShow.self)
}

struct MenuShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "The main menu of a scene's app, as that scene sees it (validated by its responders).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "The session (default: the active scene).", completion: LiveCompletion.sessions) var session: String?
    @Option(help: "With no scene: the app whose declared menu to show.", completion: LiveCompletion.apps) var app: String?

    func run() async throws {
        let global = self.global
        let request = ControlRequest.menu(.with {
            $0.sessionID = session ?? ""
            $0.appID = app ?? ""
        })
        try await global.withBroker { client in
            guard case .menu(let reply) = try await client.request(request) else { throw BrokerError.unexpectedReply }
            let validated = !reply.sessionID.isEmpty
            global.emit(.dictionary([
                "app": .string(reply.appID),
                "session": validated ? .string(reply.sessionID) : .null,
                "menus": .list(reply.menus.map { describe($0, validated: validated) }),
            ])) {
                var lines: [String] = []
                func walk(_ menu: Windowbroker_V1_Menu, depth: Int) {
                    lines.append(String(repeating: "  ", count: depth) + menu.title)
                    func label(_ command: Windowbroker_V1_MenuCommand) -> String {
                        command.title + (command.enabled ? "" : " (unavailable)") + (command.state == "on" ? " ✓" : "")
                    }
                    // Shortcuts line up in a column per menu, as a menu draws them.
                    let width = menu.children.compactMap { node -> Int? in
                        if case .command(let command)? = node.kind { return Output.displayWidth(label(command)) }
                        return nil
                    }.max() ?? 0
                    for node in menu.children {
                        switch node.kind {
                        case .menu(let submenu): walk(submenu, depth: depth + 1)
                        case .command(let command):
                            let text = label(command)
                            lines.append(String(repeating: "  ", count: depth + 1)
                                         + (command.shortcut.isEmpty ? text : Output.pad(text, toWidth: width + 4) + command.shortcut))
                        case nil: break
                        }
                    }
                }
                reply.menus.forEach { walk($0, depth: 0) }
                return lines.joined(separator: "\n")
            }
        }
    }
}

struct Commands: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "commands",
        abstract: "Every command of a scene's app, flat; --overlay: exactly what the shortcut overlay shows.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "The session (default: the active scene).", completion: LiveCompletion.sessions) var session: String?
    @Option(help: "With no scene: the app whose declared commands to list.", completion: LiveCompletion.apps) var app: String?
    @Flag(help: "Only what the overlay shows: commands with a shortcut, not hidden, that a responder performs; discoverability titles.")
    var overlay = false

    func run() async throws {
        let global = self.global
        let request = ControlRequest.commands(.with {
            $0.sessionID = session ?? ""
            $0.appID = app ?? ""
            $0.overlay = overlay
        })
        try await global.withBroker { client in
            guard case .commands(let reply) = try await client.request(request) else { throw BrokerError.unexpectedReply }
            let validated = !reply.sessionID.isEmpty
            global.emit(.list(reply.commands.map { describe($0, validated: validated) })) {
                Output.table(["SHORTCUT", "TITLE", "ID", "HANDLER"], reply.commands.map {
                    [$0.shortcut.isEmpty ? "-" : $0.shortcut, $0.title, $0.id, $0.enabled ? ($0.handler.isEmpty ? "-" : $0.handler) : "unavailable"]
                })
            }
        }
    }
}

struct Key: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Press a shortcut in a scene (default: the key scene): its responder chain, then the system, performs it.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The shortcut as key symbols, e.g. ctrl+shift+u, alt+grave.", completion: LiveCompletion.shortcuts) var shortcut: String
    @Option(help: "The session (default: the key scene).", completion: LiveCompletion.sessions) var session: String?

    func run() async throws {
        try await Self.dispatch(.with {
            $0.shortcut = shortcut
            $0.sessionID = session ?? ""
        }, global: global)
    }

    /// Sends a key or a command chosen by id, prints who performed it; a no is exit 1.
    static func dispatch(_ request: Windowbroker_V1_KeyRequest, global: GlobalOptions) async throws {
        try await global.withBroker { client in
            guard case .key(let reply) = try await client.request(.key(request), timeout: .seconds(60)) else { throw BrokerError.unexpectedReply }
            let value = reply.hasValue ? ((try? PlistValue(wire: reply.value, path: "value")) ?? .null) : .null
            global.emit(.dictionary([
                "shortcut": reply.shortcut.isEmpty ? .null : .string(reply.shortcut),
                "command": reply.command.isEmpty ? .null : .string(reply.command),
                "session": reply.sessionID.isEmpty ? .null : .string(reply.sessionID),
                "handledBy": reply.handledBy.isEmpty ? .null : .string(reply.handledBy),
                "element": reply.element.isEmpty ? .null : .string(reply.element),
                "result": .string(reply.result),
                "value": value,
                "detail": .string(reply.detail),
            ])) {
                "\(reply.shortcut.isEmpty ? request.command : reply.shortcut): \(reply.result)"
                    + (reply.command.isEmpty || reply.shortcut.isEmpty ? "" : " \(reply.command)")
                    + (reply.handledBy.isEmpty ? "" : " by \(reply.handledBy)\(reply.element.isEmpty ? "" : " \(reply.element)")")
                    + (reply.detail.isEmpty ? "" : " (\(reply.detail))")
            }
            // Declined or unhandled: nobody performed the command.
            if reply.result != "performed" { throw CLIExit(code: 1) }
        }
    }
}

struct MenuInvoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invoke",
        abstract: "Perform a menu command by its id, as choosing it in the menu would (keyless commands too).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The command's id, e.g. notes.insertDate (`wmctl menu` lists them).", completion: LiveCompletion.commandIDs) var command: String
    @Option(help: "The session (default: the key scene).", completion: LiveCompletion.sessions) var session: String?

    func run() async throws {
        try await Key.dispatch(.with {
            $0.command = command
            $0.sessionID = session ?? ""
        }, global: global)
    }
}
