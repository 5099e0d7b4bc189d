import Foundation
import IPCWire

/// How one command looks from a scene: whether anyone performs it, who, and its title and
/// state after `validate`.
public struct CommandState: Sendable, Equatable {
    public var enabled: Bool
    /// Who would perform it; nil when it is unavailable.
    public var handler: Responder?
    public var title: String?
    public var state: String
}

/// An app's main menu as `wmctl menu` shows it, with each command's state when a scene
/// could be asked.
public struct MenuView: Sendable {
    public var app: AppID
    public var session: SessionID?
    public var menu: MainMenu
    /// nil: no scene to ask (the menu as declared).
    public var states: [String: CommandState]?
}

/// What a key or a chosen command did: the command it reached, who performed it, and why
/// not when nobody did.
public struct KeyOutcome: Sendable {
    /// nil when a command was invoked by its id.
    public var shortcut: KeyShortcut?
    public var command: String?
    public var session: SessionID?
    public var handledBy: Responder?
    public var result: CommandResult
    public var value: PlistValue?
    public var element: String?
    public var detail: String
}

/// What reaches the command dispatch: a key, or a command chosen by its id (a menu, the
/// command overlay, `wmctl menu invoke`), keyless ones included.
public enum CommandInput: Sendable {
    case shortcut(KeyShortcut)
    case command(id: String)
}

/// Keyboard commands and the main menu: a shortcut goes to the key scene (or the one named),
/// whose responder chain (focused element, scene, app delegate) gets the first chance; the
/// system performs its own commands when nobody in the scene does.
extension Broker {
    /// The session a key or a menu query goes to: the one named, else the key scene.
    func commandTarget(_ session: SessionID?) throws(BrokerError) -> SessionID? {
        if let session {
            _ = try existingSession(session)
            return session
        }
        return focus.key.flatMap { drivers[$0]?.session.state.isForeground == true ? $0 : nil }
    }

    /// The menu of the target scene's app, validated by that scene when it runs.
    public func menuView(session requested: SessionID?, app requestedApp: AppID?) async throws -> MenuView {
        let target = try commandTarget(requested)
        guard let app = target.flatMap({ drivers[$0]?.session.appID }) ?? requestedApp else {
            throw BrokerError(.invalidState, "no scene is the key scene; name a session (--session) or an app (--app)")
        }
        let menu = try apps.mainMenu(app)
        guard let target, drivers[target]?.session.appID == app, hasConnectedScene(target) else {
            return MenuView(app: app, session: target, menu: menu, states: nil)
        }
        return MenuView(app: app, session: target, menu: menu, states: try await validate(menu, in: target))
    }

    private func validate(_ menu: MainMenu, in id: SessionID) async throws -> [String: CommandState] {
        let reply = try await command(id, .validateCommands(.with { $0.commands = menu.commands.map(\.wire) }),
                                      timeout: configuration.workerTimeout, doing: "validating commands")
        guard case .commandStates(let answered) = reply else {
            throw BrokerError(.workerFailed, "the scene answered the command validation with something else")
        }
        let byID = Dictionary(answered.commands.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var states: [String: CommandState] = [:]
        for command in menu.commands {
            let answer = byID[command.id]
            let byScene = answer?.enabled == true
            let bySystem = !byScene && command.systemAction != nil
            states[command.id] = CommandState(
                enabled: !command.attributes.contains(.disabled) && (byScene || bySystem),
                handler: byScene ? answer.flatMap { Responder(rawValue: $0.handler) } ?? .scene : bySystem ? .system : nil,
                title: answer.flatMap { $0.title.isEmpty || $0.title == command.title ? nil : $0.title },
                state: answer?.state.isEmpty == false ? answer!.state : "off")
        }
        return states
    }

    /// Dispatches a shortcut: to the command it belongs to in the target scene's app, through
    /// the scene's responder chain, then the system.
    public func key(_ shortcut: KeyShortcut, session requested: SessionID?) async throws -> KeyOutcome {
        try await dispatch(.shortcut(shortcut), session: requested)
    }

    /// The one dispatch of keys and menu choices.
    public func dispatch(_ input: CommandInput, session requested: SessionID?) async throws -> KeyOutcome {
        let shortcut: KeyShortcut? = if case .shortcut(let key) = input { key } else { nil }
        var outcome = KeyOutcome(shortcut: shortcut, session: nil, result: .unhandled, detail: "")
        guard let target = try commandTarget(requested), let app = drivers[target]?.session.appID else {
            outcome.detail = "no scene is the key scene: the \(shortcut == nil ? "command" : "key") went nowhere"
            return outcome
        }
        outcome.session = target
        let menu = try apps.mainMenu(app)
        let found: MenuCommand? = switch input {
        case .shortcut(let key): menu.command(for: key)
        case .command(let id): menu.command(id: id)
        }
        guard let command = found else {
            switch input {
            case .shortcut(let key): outcome.detail = "no command of '\(app)' has \(key)"
            case .command(let id): outcome.detail = "'\(app)' has no command '\(id)' (`wmctl menu` lists them)"
            }
            return outcome
        }
        outcome.command = command.id
        let shortcutText = shortcut?.description ?? ""
        defer { emit(target, app: app, .commandPerformed(command: command.id, shortcut: shortcutText, handledBy: outcome.handledBy?.rawValue ?? "", result: outcome.result.rawValue)) }
        if command.attributes.contains(.disabled) {
            outcome.detail = "'\(command.id)' is disabled"
            return outcome
        }
        if hasConnectedScene(target) {
            let reply = try await self.command(target, .performCommand(.with {
                $0.command = command.id
                $0.shortcut = shortcutText
            }), timeout: configuration.workerTimeout, doing: "performing \(command.id)")
            if case .commandResult(let result) = reply, !result.handledBy.isEmpty {
                // A level this broker does not know (a newer SDK's) is still the scene's.
                outcome.handledBy = Responder(rawValue: result.handledBy) ?? .scene
                outcome.element = result.element.isEmpty ? nil : result.element
                outcome.result = result.performed ? .performed : .declined
                outcome.detail = result.declineReason
                if result.hasValue { outcome.value = try? PlistValue(wire: result.value, path: "value") }
                return outcome
            }
        }
        guard let action = command.systemAction else {
            outcome.detail = "nobody in the scene performs '\(command.id)'"
            return outcome
        }
        outcome.handledBy = .system
        outcome.result = .performed
        outcome.value = try await perform(action, from: target, app: app)
        return outcome
    }

    private func perform(_ action: SystemAction, from id: SessionID, app: AppID) async throws -> PlistValue? {
        switch action {
        case .newWindow:
            let opened = try await open(ActivationRequest(appID: app, sessionID: nil, activity: nil, forceNew: true, requestedBy: id))
            return .string(opened.sessionID.description)
        case .closeWindow:
            _ = try await close(id)
            return .string(id.description)
        case .nextWindow, .previousWindow:
            let ordered = allSessions.filter { $0.appID == app }.sorted { $0.createdAt < $1.createdAt }.map(\.id)
            guard let index = ordered.firstIndex(of: id), ordered.count > 1 else { return .string(id.description) }
            let next = ordered[(index + (action == .nextWindow ? 1 : ordered.count - 1)) % ordered.count]
            _ = try await activate(next, requestedBy: id)
            return .string(next.description)
        case .showAppSwitcher:
            // On a display: Show All Windows on screen. The answer lists the sessions either way
            // (headless, that list is all there is to show).
            if await systemUI.hasDisplay {
                _ = try await showSystemUI(.switcher(app: app))
            }
            return .list(allSessions.filter { $0.appID == app }.sorted { $0.lastActiveAt > $1.lastActiveAt }.map {
                .dictionary(["session": .string($0.id.description), "title": .string($0.title), "state": .string($0.state.rawValue)])
            })
        }
    }
}

extension MenuCommand {
    var wire: Windowbroker_V1_MenuCommand {
        .with {
            $0.id = id
            $0.title = title
            $0.discoverabilityTitle = discoverabilityTitle ?? ""
            $0.shortcut = shortcut?.description ?? ""
            $0.attributes = attributes.map(\.rawValue).sorted()
            $0.noAutomaticMirroring = !allowsAutomaticMirroring
            $0.system = isSystem
        }
    }
}
