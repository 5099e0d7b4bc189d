import Foundation
import IPCWire
import Logging
import NIOCore

/// Answers one control connection's requests (`ControlConnectionHandler` reads them and
/// writes the answers), and the control requests scenes send over their own connections: each
/// with a reply or a typed error.
struct ControlRequestHandler: Sendable {
    let broker: Broker
    let logger: Logger
    /// The connection table and this connection's entry (nil for a scene's requests).
    var connections: ControlConnections? = nil
    var connectionID: ControlConnections.ID = 0
    /// The scene this connection's peer speaks as (`ScenePeers`): a scene worker or a process
    /// it started gets a scene's answers here too.
    var requester: SessionID? = nil
    /// The frames the peer may send; a watcher only listens, and may send small ones only.
    var frameLimit: InboundFrameLimit? = nil

    /// A control connection's `watch`: the events it asked for, from now on, once the filter's
    /// apps and sessions are known and there is room for one more watcher.
    func startWatching(_ watch: Windowbroker_V1_WatchRequest) async throws(BrokerError) -> (id: UUID, events: AsyncStream<EventRecord>, replayed: Int) {
        if let requester { try Self.checkSceneMay(.watch(watch), requester: requester) }
        if let connections, !(await connections.startWatching(connectionID)) {
            throw BrokerError(.resourceExhausted, "\(connections.watcherLimit) watchers are connected; stop one first")
        }
        for app in watch.appIds { try await broker.checkKnownApp(AppID(app)) }
        var resolved = watch
        resolved.sessionIds = []
        for text in watch.sessionIds {
            resolved.sessionIds.append(try await broker.resolveSession(text).description)
        }
        let filter = try EventFilter(resolved)
        return await broker.subscribe(filter, recent: Int(watch.recent))
    }

    /// Says why the connection was closed: its peer did not read an answer within
    /// `replyWriteTimeout`.
    func closedUnread() {
        logger.notice("closed a control connection that does not read its answers", metadata: ["timeout": "\(broker.configuration.replyWriteTimeout)"])
    }

    /// The answer to a request of this control connection, the connection busy (not evictable)
    /// until the answer is ready: what remains is the peer's to read, and a peer that does not
    /// read it in time is closed.
    func answerAsConnection(_ kind: ControlRequest) async -> Envelope.OneOf_Body {
        await connections?.began(connectionID)
        let answer = await answer(kind, from: requester)
        await connections?.ended(connectionID)
        return answer
    }

    /// The reply to a control request, or the error, as the body to send back. `requester` is
    /// the scene that asked when the request came over a worker connection.
    func answer(_ request: Windowbroker_V1_ControlRequest, from requester: SessionID?) async -> Envelope.OneOf_Body {
        guard let kind = request.kind else {
            return .error(BrokerError(.invalidRequest, "expected a control request").wire)
        }
        return await answer(kind, from: requester)
    }

    func answer(_ kind: ControlRequest, from requester: SessionID?) async -> Envelope.OneOf_Body {
        do {
            if let requester { try Self.checkSceneMay(kind, requester: requester) }
            try await broker.admitRequest(changesState: Self.changesState(kind))
        } catch {
            return refusal(error)
        }
        // Finished before the answer goes out (no task started only to say so): a stop that
        // waits for requests in flight sees this one end with its answer.
        let answer: Envelope.OneOf_Body
        do {
            let reply = try await handle(kind, from: requester)
            answer = .controlReply(.with { $0.kind = reply })
        } catch {
            answer = refusal(error)
        }
        await broker.finishRequest()
        return answer
    }

    private func refusal(_ error: any Error) -> Envelope.OneOf_Body {
        if let error = error as? BrokerError { return .error(error.wire) }
        logger.error("control request failed", metadata: ["error": "\(error)"])
        return .error(BrokerError(.internalError, "internal error: \(error)").wire)
    }

    /// Scenes may ask for what UIKit lets an app ask for: activation, destruction, refresh,
    /// and what one process of a UIKit app shares with its other windows: posts and defaults;
    /// its own command overlay while the command key is held over its window, and its app's
    /// commands (the shortcuts its window keeps). Everything else on the control protocol is
    /// for wmctl.
    static func checkSceneMay(_ kind: ControlRequest, requester: SessionID) throws(BrokerError) {
        switch kind {
        case .open, .activate, .close, .refresh, .post, .defaults, .menuChange, .systemUi, .commands: return
        default:
            throw BrokerError(.permissionDenied, "a scene may request activation, destruction and refresh of its app's scenes, post updates, change its app's defaults and read its app's commands; the rest of the control protocol is for wmctl")
        }
    }

    /// Requests that only read are answered while the broker drains; the others are refused.
    static func changesState(_ kind: ControlRequest) -> Bool {
        switch kind {
        case .status, .apps, .sessions, .show, .search, .menu, .commands, .logs, .ping, .pressure: false
        case .display(let request): !request.waylandDisplay.isEmpty
        default: true
        }
    }

    static func check(_ hello: Windowbroker_V1_Hello) -> BrokerError? {
        if hello.protocolVersion != WireProtocol.version {
            return BrokerError(.unsupportedVersion, "client speaks protocol \(hello.protocolVersion); this broker speaks \(WireProtocol.version)")
        }
        if hello.peerKind != .control {
            return BrokerError(.permissionDenied, "only control clients connect here; workers are started by the broker")
        }
        return nil
    }

    /// A command as a scene sees it; without states (no scene), every command counts as enabled
    /// unless it is disabled.
    static func wire(_ command: MenuCommand, states: [String: CommandState]?) -> Windowbroker_V1_MenuCommand {
        var wire = command.wire
        if let state = states?[command.id] {
            wire.enabled = state.enabled
            wire.handler = state.handler?.rawValue ?? ""
            wire.state = state.state
            if let title = state.title { wire.title = title }
        } else {
            wire.enabled = !command.attributes.contains(.disabled)
        }
        return wire
    }

    /// The answer to an app's menu change, from a scene or a prewarmed process: the app's
    /// whole main menu as it is now, unless the sender asked for it to be left out.
    static func menuChanged(app: AppID, _ menu: MainMenu, omitMenu: Bool) -> Windowbroker_V1_MenuReply {
        .with {
            $0.appID = app.rawValue
            if !omitMenu { $0.menus = menu.menus.map { wire($0, states: nil) } }
        }
    }

    static func wire(_ menu: Menu, states: [String: CommandState]?) -> Windowbroker_V1_Menu {
        .with {
            $0.id = menu.id
            $0.title = menu.title
            $0.children = menu.children.map { child in
                .with {
                    switch child {
                    case .menu(let submenu): $0.menu = wire(submenu, states: states)
                    case .command(let command): $0.command = wire(command, states: states)
                    }
                }
            }
        }
    }

    /// The app a post or defaults request is about; a scene's is always its own.
    private func app(_ requested: String, requester: SessionID?) async throws -> AppID {
        if let requester { return try await broker.appForSceneRequest(requested, requester: requester) }
        guard let app = Self.optionalApp(requested) else { throw BrokerError(.invalidRequest, "name the app") }
        return app
    }

    /// The app a request names; nil for none (an empty field on the wire).
    private static func optionalApp(_ text: String) -> AppID? {
        text.isEmpty ? nil : AppID(text)
    }

    /// A full session id, or a unique prefix of at least 4 characters.
    private func sessionID(_ text: String, for requester: SessionID? = nil) async throws -> SessionID {
        try await broker.resolveSession(text, visibleTo: requester)
    }

    /// The menu `menu` and `commands` answer with: of the named session, else of the app.
    private func menuView(session: String, app: String) async throws -> MenuView {
        try await broker.menuView(session: try await optionalSessionID(session), app: Self.optionalApp(app))
    }

    /// The same, where a session is optional (empty: none).
    private func optionalSessionID(_ text: String) async throws -> SessionID? {
        text.isEmpty ? nil : try await sessionID(text)
    }

    private func stateReply(_ outcome: SessionOutcome) -> ControlReply {
        .sessionState(.with {
            $0.sessionID = outcome.sessionID.description
            $0.state = outcome.state.wire
            $0.created = outcome.created
            $0.detail = outcome.notes.joined(separator: "; ")
            if let launch = outcome.launch { $0.launch = launch.wire }
            if let presentation = outcome.presentation { $0.presentation = presentation.wire }
        })
    }

    private func handle(_ request: ControlRequest, from requester: SessionID?) async throws -> ControlReply {
        switch request {
        case .status:
            let status = await broker.status()
            let report = await broker.pressureReport()
            let prewarmed = await broker.prewarmedCounts()
            let zygotes = await broker.launcher.zygotes()
            let warnings = await broker.warnings
            return .status(.with {
                $0.pressureLevel = report.level.wire
                $0.reclaimedCount = UInt32(report.reclaimedCount)
                $0.version = WireProtocol.brokerVersion
                $0.pid = getpid()
                $0.uptimeSeconds = status.uptime
                $0.sessions = UInt32(status.sessions)
                $0.workers = UInt32(status.workers)
                $0.prewarmed = Dictionary(uniqueKeysWithValues: prewarmed.map { ($0.key.rawValue, UInt32($0.value)) })
                $0.zygotes = Dictionary(uniqueKeysWithValues: zygotes.compactMap { app, state in
                    if case .ready(let pid) = state { (app.rawValue, pid) } else { nil }
                })
                $0.warnings = warnings
                $0.storeWrites = UInt64(broker.storeWrites)
                $0.updatesPosted = status.updatesPosted
                $0.updatesDropped = status.updatesDropped
            })
        case .apps:
            let apps = await broker.appList()
            let (broken, warned) = await broker.manifestProblems
            let zygotes = await broker.launcher.zygotes()
            func wire(_ problem: ManifestProblem) -> Windowbroker_V1_BrokenManifest {
                .with {
                    $0.file = problem.file
                    $0.field = problem.field
                    $0.reason = problem.reason
                }
            }
            return .apps(.with {
                $0.broken = broken.map(wire)
                $0.warnings = warned.map(wire)
                $0.apps = apps.map { app in
                    .with {
                        $0.id = app.id.rawValue
                        $0.name = app.name
                        $0.supportsMultipleScenes = app.supportsMultipleScenes
                        $0.activityTypes = app.activityTypes
                        $0.configurations = app.configurations.map(\.name)
                        $0.commandErrors = app.commandErrors
                        if app.zygote { $0.zygote = zygotes[app.id]?.description ?? "starting" }
                        $0.actions = app.actions.map { action in
                            .with {
                                $0.name = action.name
                                $0.description_p = action.description ?? ""
                                $0.arguments = action.arguments ?? []
                            }
                        }
                    }
                }
            })
        case .open(var open):
            let maxBytes = broker.configuration.maxActivityBytes
            if open.hasActivity, open.activity.activityType.isEmpty {
                open.activity.activityType = try await broker.defaultActivityType(app: Self.optionalApp(open.appID), session: open.sessionID)
            }
            let activity = open.hasActivity ? try UserActivity(wire: open.activity, maxBytes: maxBytes) : nil
            var request = ActivationRequest(
                appID: Self.optionalApp(open.appID),
                sessionID: try await optionalSessionID(open.sessionID),
                activity: activity,
                forceNew: open.forceNew,
                presentation: Presentation(wire: open.presentation),
                requestedBy: requester)
            request.configuration = open.configuration.isEmpty ? nil : open.configuration
            request.activationToken = open.activationToken.isEmpty ? nil : open.activationToken
            return stateReply(try await broker.open(request))
        case .activate(let command):
            return stateReply(try await broker.activate(
                try await sessionID(command.sessionID, for: requester), requestedBy: requester, retryRestore: command.retryRestore,
                activationToken: command.activationToken.isEmpty ? nil : command.activationToken))
        case .background(let command):
            return stateReply(try await broker.background(try await sessionID(command.sessionID)))
        case .reclaim(let command):
            return stateReply(try await broker.reclaim(try await sessionID(command.sessionID), force: command.force))
        case .close(let command):
            return stateReply(try await broker.close(try await sessionID(command.sessionID, for: requester), requestedBy: requester, dismissal: Dismissal(wire: command.dismissal)))
        case .refresh(let command):
            return stateReply(try await broker.refresh(try await sessionID(command.sessionID, for: requester), requestedBy: requester))
        case .sessions(let list):
            let listed = Self.optionalApp(list.appID)
            if let listed { try await broker.checkKnownApp(listed) }
            let sessions = await broker.sessionStatuses(app: listed).map { $0.wire(includeRestoration: false) }
            // A page at most 500 long: with titles capped at 256 characters it fits a frame.
            let limit = Int(list.limit == 0 ? 500 : min(list.limit, 500))
            let start = min(Int(list.offset), sessions.count)
            let end = min(sessions.count, start + limit)
            return .sessions(.with {
                $0.sessions = Array(sessions[start..<end])
                $0.total = UInt32(sessions.count)
                $0.nextOffset = end < sessions.count ? UInt32(end) : 0
            })
        case .show(let command):
            return .session(try await broker.sessionDetail(try await sessionID(command.sessionID)).wire(includeRestoration: true))
        case .display(let request):
            let display = request.waylandDisplay.isEmpty ? await broker.display() : try await broker.useDisplay(request.waylandDisplay)
            return .display(.with {
                $0.waylandDisplay = display.name ?? ""
                $0.path = display.path ?? ""
                $0.answers = display.answers
                $0.waiting = UInt32(display.waiting)
            })
        case .snapshot(let request):
            return .snapshot(try await broker.snapshot(try await sessionID(request.sessionID), thumbnail: request.thumbnail).wire)
        case .systemUi(let request):
            // A scene shows and hides only its own command overlay (its command key held).
            if requester != nil, !request.hide, request.surface != .commandOverlay {
                throw BrokerError(.permissionDenied, "a scene may show only its own command overlay")
            }
            if request.hide {
                let hidden = await broker.hideSystemUI(onlyOverlayOf: requester)
                return .systemUi(.with { $0.hidden = hidden })
            }
            let surface: SystemUIRequestSurface = switch request.surface {
            case .commandOverlay: .commandOverlay(session: requester != nil ? requester : try await optionalSessionID(request.sessionID))
            default: .switcher(app: Self.optionalApp(request.appID))
            }
            let shown = try await broker.showSystemUI(surface)
            return .systemUi(.with {
                $0.pid = UInt32(shown.pid)
                $0.firstFrameMicros = UInt64(max(0, shown.firstFrame.microseconds))
                $0.width = Int32(shown.report.width)
                $0.height = Int32(shown.report.height)
                $0.items = shown.report.items.map { item in
                    .with {
                        $0.id = item.id
                        $0.x = Int32(item.x ?? 0)
                        $0.y = Int32(item.y ?? 0)
                        $0.width = Int32(item.width ?? 0)
                        $0.height = Int32(item.height ?? 0)
                    }
                }
            })
        case .send(let send):
            let arguments = try PlistValue.dictionary(wire: send.arguments, path: "arguments")
            return .actionResult(try await broker.perform(try await sessionID(send.sessionID), action: send.action, arguments: arguments).wire)
        case .post(let post):
            let app = try await app(post.appID, requester: requester)
            let payload = try PlistValue.dictionary(wire: post.payload, path: "payload")
            guard post.waitTimeoutSeconds.isFinite, post.waitTimeoutSeconds >= 0, post.waitTimeoutSeconds <= 3600 else {
                throw BrokerError(.invalidRequest, "the wait timeout must be between 0 and 3600 seconds")
            }
            let wait: Duration? = post.wait ? .milliseconds(Int64((post.waitTimeoutSeconds > 0 ? post.waitTimeoutSeconds : 10) * 1000)) : nil
            let outcome = try await broker.post(app: app, name: post.name, payload: payload, from: requester, wait: wait)
            let times = outcome.acknowledged.values.sorted()
            return .post(.with {
                $0.sequence = outcome.sequence
                $0.receivers = UInt32(outcome.receivers)
                $0.delivered = UInt32(post.wait ? times.count : outcome.receivers)
                if !times.isEmpty {
                    $0.p50Micros = UInt64(times[(times.count - 1) / 2].microseconds)
                    $0.maxMicros = UInt64(times[times.count - 1].microseconds)
                }
                $0.unacknowledged = outcome.unacknowledged.map { $0.description }.sorted()
                $0.dropped = outcome.dropped.map { $0.description }.sorted()
            })
        case .defaults(let request):
            let app = try await app(request.appID, requester: requester)
            if request.key.isEmpty {
                guard !request.hasValue, !request.remove else {
                    throw BrokerError(.invalidRequest, "setting or removing a default needs its key")
                }
                let values = try await broker.defaults(app: app)
                return .defaults(.with { $0.values = PlistValue.wire(dictionary: values) })
            }
            if request.hasValue || request.remove {
                guard !(request.hasValue && request.remove) else {
                    throw BrokerError(.invalidRequest, "a default is either set or removed, not both")
                }
                let value = request.remove ? nil : try PlistValue(wire: request.value, path: request.key)
                let sequence = try await broker.setDefault(app: app, key: request.key, value: value, from: requester)
                return .defaults(.with {
                    $0.sequence = sequence
                    if let value { $0.values = PlistValue.wire(dictionary: [request.key: value]) }
                })
            }
            let values = try await broker.defaults(app: app)
            return .defaults(.with {
                if let value = values[request.key] { $0.values = PlistValue.wire(dictionary: [request.key: value]) }
            })
        case .search(let search):
            let outcome = try await broker.search(search.query, app: Self.optionalApp(search.appID),
                                                  limit: search.limit == 0 ? 20 : Int(search.limit))
            return .search(.with {
                $0.hits = outcome.hits.map(\.wire)
                $0.unavailable = outcome.unavailable.map(\.wire)
            })
        case .menu(let request):
            let view = try await menuView(session: request.sessionID, app: request.appID)
            return .menu(.with {
                $0.appID = view.app.rawValue
                $0.sessionID = view.session?.description ?? ""
                $0.menus = view.menu.menus.map { Self.wire($0, states: view.states) }
            })
        case .commands(var request):
            if let requester {
                // A scene reads its own app's commands (its window turns their shortcuts into
                // keys it keeps from its widgets), as the menu says, not validated by it.
                request.appID = try await broker.appForSceneRequest(request.appID, requester: requester).rawValue
                request.sessionID = ""
            }
            let view = try await menuView(session: request.sessionID, app: request.appID)
            var commands = view.menu.commands.map { Self.wire($0, states: view.states) }
            if request.overlay {
                // What the held modifier shows: keyed, not hidden, performable, the
                // discoverability title where there is one.
                commands = commands.filter { !$0.shortcut.isEmpty && !$0.attributes.contains("hidden") && $0.enabled }
                    .map { command in
                        var shown = command
                        if !command.discoverabilityTitle.isEmpty { shown.title = command.discoverabilityTitle }
                        return shown
                    }
            }
            return .commands(.with {
                $0.appID = view.app.rawValue
                $0.sessionID = view.session?.description ?? ""
                $0.commands = commands
            })
        case .key(let request):
            let input: CommandInput = request.command.isEmpty ? .shortcut(try KeyShortcut(parsing: request.shortcut)) : .command(id: request.command)
            let outcome = try await broker.dispatch(input, session: try await optionalSessionID(request.sessionID))
            return .key(.with {
                $0.shortcut = outcome.shortcut?.description ?? ""
                $0.command = outcome.command ?? ""
                $0.sessionID = outcome.session?.description ?? ""
                $0.handledBy = outcome.handledBy?.rawValue ?? ""
                $0.result = outcome.result.rawValue
                if let value = outcome.value { $0.value = value.wire }
                $0.element = outcome.element ?? ""
                $0.detail = outcome.detail
            })
        case .menuChange(let change):
            guard let requester else {
                throw BrokerError(.invalidRequest, "menu changes come from an app's scenes (SceneWorker: scene.changeMenu)")
            }
            let app = try await broker.appForSceneRequest("", requester: requester)
            return .menu(Self.menuChanged(app: app, try await broker.changeMenu(app: app, operations: change.operations), omitMenu: change.omitMenu))
        case .logs(let request) where request.sessionID.isEmpty && !request.appID.isEmpty:
            let app = AppID(request.appID)
            try await broker.checkKnownApp(app)
            let lines = broker.workerOutput.failedLaunch(of: app).suffix(Int(min(max(request.lines, 1), UInt32(WorkerOutput.linesPerSession))))
            return .logs(.with { $0.lines = lines.map(\.wire) })
        case .logs(let request):
            let id = try await sessionID(request.sessionID)
            _ = try await broker.existingSession(id)
            // The newest lines that fit half a frame (500 lines of 4 KiB would not fit one).
            let lines = broker.workerOutput.lines(of: id, last: Int(min(max(request.lines, 1), UInt32(WorkerOutput.linesPerSession))),
                                                  maxBytes: broker.configuration.maxFrameBytes / 2)
            return .logs(.with {
                $0.sessionID = id.description
                $0.lines = lines.map(\.wire)
            })
        case .watch:
            throw BrokerError(.invalidRequest, "this connection is already watching")
        case .ping(let ping):
            // A control connection answers it itself (`ControlConnectionHandler`); a scene's comes here.
            return .ping(.with { $0.payload = ping.payload })
        case .pressure:
            return .pressure(await broker.pressureReport().wire)
        case .simulatePressure(let simulate):
            let level = PressureLevel(wire: simulate.level)
            guard level > .normal else {
                throw BrokerError(.invalidRequest, "simulate warning or critical; normal needs no response")
            }
            let outcome = await broker.simulatePressure(level, saving: !simulate.skipSave)
            return .pressureResponse(.with {
                $0.level = outcome.level.wire
                $0.warned = outcome.warned.map { record in
                    .with {
                        $0.sessionID = record.0.description
                        $0.freedBytes = record.1
                    }
                }
                $0.reclaimed = outcome.reclaimed.map { record in
                    .with {
                        $0.sessionID = record.id.description
                        $0.freedBytes = record.freed
                        $0.seconds = record.seconds
                        $0.startedAt = record.startedAt.timeIntervalSince1970
                        $0.detail = record.detail
                    }
                }
            })
        }
    }
}

