import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

extension Presentation: ExpressibleByArgument {}

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "open", abstract: "Open a scene of an app (requestSceneSessionActivation); it ends foregroundActive.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app id (see `wmctl apps`).", completion: LiveCompletion.apps) var app: String
    @Option(help: "The activity type (one the app declares; default: its first, when --title, --target or --info is given).",
            completion: LiveCompletion.activityTypes) var activity: String?
    @Option(help: "The activity's title.") var title: String?
    @Option(help: "The activity's targetContentIdentifier (matched against scenes' activation conditions).") var target: String?
    @Option(help: "A userInfo entry KEY=VALUE (a string). Repeatable.") var info: [String] = []
    @Option(name: .customLong("info-json"), help: "userInfo as a JSON object; {\"$date\":...}, {\"$data\":...}, {\"$url\":...} for those types.") var infoJSON: String?
    @Flag(name: .customLong("new"), help: "Always create a new scene, even when one prefers this content.") var forceNew = false
    @Option(help: "An existing session to bring forward; the activity is delivered to it (relaunched if needed).") var session: String?
    @Option(help: "The configuration a new scene uses (see `wmctl apps`).") var configuration: String?
    @Option(help: "standard (beside the active scene), prominent (modal, over the others) or automatic (the broker picks).")
    var presentation: Presentation = .standard

    func run() async throws {
        var userInfo = try parsePairs(info, option: "--info")
        if let infoJSON {
            let parsed: PlistValue
            do { parsed = try PlistValue.parse(json: infoJSON) } catch { throw ValidationError("--info-json: \(error)") }
            guard case .dictionary(let entries) = parsed else {
                throw ValidationError("--info-json must be a JSON object (userInfo is a dictionary)")
            }
            userInfo.merge(entries) { _, new in new }
        }
        let request = Windowbroker_V1_OpenRequest.with {
            $0.appID = app
            $0.forceNew = forceNew
            $0.sessionID = session ?? ""
            $0.configuration = configuration ?? ""
            $0.presentation = presentation.wire
            $0.activationToken = GlobalOptions.activationToken
            if activity != nil || title != nil || target != nil || !userInfo.isEmpty {
                // An empty type: the broker uses the app's first declared activity type.
                $0.activity = UserActivity(activityType: activity ?? "", title: title ?? "", targetContentIdentifier: target, userInfo: userInfo).wire
            }
        }
        let global = self.global
        try await global.withBroker { client in
            guard case .sessionState(let reply) = try await client.request(.open(request), timeout: .seconds(60)) else { throw BrokerError.unexpectedReply }
            global.emit(reply, verb: reply.created ? "opened" : "activated", showingCreated: true)
        }
    }
}

/// The shared shape of activate / background / reclaim / close.
protocol SessionCommand: AsyncParsableCommand {
    var global: GlobalOptions { get }
    var session: String { get }
    static var verb: String { get }
    static func request(_ command: Windowbroker_V1_SessionCommand) -> ControlRequest
}

extension SessionCommand {
    func run() async throws {
        try await runStateRequest(Self.request(.with { $0.sessionID = session }), verb: Self.verb, global: global)
    }
}

/// Sends a request the broker answers with a session's state, and prints that.
func runStateRequest(_ request: ControlRequest, verb: String, global: GlobalOptions) async throws {
    try await global.withBroker { client in
        guard case .sessionState(let reply) = try await client.request(request, timeout: .seconds(60)) else { throw BrokerError.unexpectedReply }
        global.emit(reply, verb: verb, showingCreated: false)
    }
}

struct Activate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "activate", abstract: "Bring a session to the foreground (relaunched and restored if it has no process).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String
    @Flag(help: "Put a quarantined restoration activity back (see `show`) and try it again.") var retryRestore = false

    func run() async throws {
        let request = ControlRequest.activate(.with {
            $0.sessionID = session
            $0.retryRestore = retryRestore
            $0.activationToken = GlobalOptions.activationToken
        })
        try await runStateRequest(request, verb: "activated", global: global)
    }
}

struct Background: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "background", abstract: "Send a scene to the background; its restoration activity is saved.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String
    static let verb = "backgrounded"
    static func request(_ command: Windowbroker_V1_SessionCommand) -> ControlRequest { .background(command) }
}

struct Reclaim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reclaim",
        abstract: "Take a background scene's process away after saving its state; the session stays.",
        discussion: "Refused (exit 1, the save's error code) when the scene's latest state cannot be saved; --force takes it anyway.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String
    @Flag(help: "Reclaim even if the latest state cannot be saved (it is lost).") var force = false

    func run() async throws {
        let request = ControlRequest.reclaim(.with {
            $0.sessionID = session
            $0.force = force
        })
        try await runStateRequest(request, verb: "reclaimed", global: global)
    }
}

struct Close: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "close", abstract: "Discard a session (close it in the switcher); its app is told and its saved state deleted.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String
    static let verb = "closed"
    static func request(_ command: Windowbroker_V1_SessionCommand) -> ControlRequest { .close(.with { $0.sessionID = command.sessionID }) }
}

struct Refresh: SessionCommand {
    static let configuration = CommandConfiguration(commandName: "refresh", abstract: "Refresh a session's switcher entry: a running scene is asked for a fresh title and activity.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String
    static let verb = "refreshed"
    static func request(_ command: Windowbroker_V1_SessionCommand) -> ControlRequest { .refresh(command) }
}

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sessions", abstract: "The switcher: every session, with or without a process.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Only this app's sessions.", completion: LiveCompletion.apps) var app: String?
    @Flag(name: [.short, .customLong("quiet")], help: "Print the session ids only, one per line.") var quiet = false
    @Flag(help: "Show full session ids (the table shows their first 8 characters, which work wherever a session is taken).")
    var noTrunc = false

    func run() async throws {
        let global = self.global
        let app = self.app ?? ""
        let quiet = self.quiet
        let noTrunc = self.noTrunc
        try await global.withBroker { client in
            let sessions = try await client.allSessions(app: app)
            if quiet {
                for session in sessions { Output.line(session.id) }
                return
            }
            global.emit(.list(sessions.map { .dictionary(Output.session($0)) })) {
                Output.table(
                    ["ID", "APP", "STATE", "PID", "PSS", "SAVED", "ACTIVE", "TITLE"],
                    sessions.map {
                        [noTrunc ? $0.id : String($0.id.prefix(8)), $0.appID, Output.stateName($0.state) + ($0.key ? " (key)" : ""), $0.pid == 0 ? "-" : "\($0.pid)",
                         Output.pss($0), ($0.restorationSaved ? "yes" : "no") + ($0.snapshotKept ? "+pic" : ""), Output.ago($0.lastActiveAt), $0.title]
                    }, flexible: noTrunc ? nil : 7)
            }
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "One session, with its saved restoration activity.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String
    @Option(help: "Also write the session's snapshot (a picture of its window, PNG) to this file.", completion: .file(extensions: ["png"]))
    var snapshot: String?
    @Flag(help: "With --snapshot: write the thumbnail the switcher shows instead (the whole picture when the scene drew none).")
    var thumbnail = false

    func validate() throws {
        if thumbnail && snapshot == nil { throw ValidationError("--thumbnail goes with --snapshot FILE") }
    }

    func run() async throws {
        let global = self.global
        let snapshotPath = self.snapshot
        let thumbnail = self.thumbnail
        let request = ControlRequest.show(.with { $0.sessionID = session })
        try await global.withBroker { client in
            guard case .session(let info) = try await client.request(request) else { throw BrokerError.unexpectedReply }
            var object = Output.session(info)
            func describe(_ wire: Windowbroker_V1_UserActivity, present: Bool) -> PlistValue {
                guard present, let activity = try? UserActivity(wire: wire, maxBytes: .max) else { return .null }
                return .dictionary([
                    "activityType": .string(activity.activityType),
                    "title": .string(activity.title),
                    "targetContentIdentifier": activity.targetContentIdentifier.map { .string($0) } ?? .null,
                    "userInfo": .dictionary(activity.userInfo),
                    "keywords": .list(activity.keywords.map { .string($0) }),
                    "eligibleForSearch": .bool(activity.isEligibleForSearch),
                    "interactionState": activity.interactionState.map { .data($0) } ?? .null,
                ])
            }
            object["restorationActivity"] = describe(info.restorationActivity, present: info.hasRestorationActivity)
            object["currentActivity"] = describe(info.currentActivity, present: info.hasCurrentActivity)
            object["quarantinedRestoration"] = describe(info.quarantinedRestoration, present: info.hasQuarantinedRestoration)
            object["storage"] = .dictionary((try? PlistValue.dictionary(wire: info.storage, path: "storage")) ?? [:])
            // Asked before anything is printed: a session without a picture is a refusal alone.
            var picture: Windowbroker_V1_SnapshotReply?
            if snapshotPath != nil {
                guard case .snapshot(let reply) = try await client.request(.snapshot(.with {
                    $0.sessionID = info.id
                    $0.thumbnail = thumbnail
                })) else {
                    throw BrokerError.unexpectedReply
                }
                picture = reply
            }
            global.emit(.dictionary(object)) { SessionDetail.render(info) }
            if let snapshotPath, let picture {
                do {
                    try picture.png.write(to: URL(fileURLWithPath: snapshotPath))
                } catch {
                    throw BrokerError(.invalidRequest, "cannot write the snapshot to \(snapshotPath): \(error)")
                }
                let what = picture.thumbnail ? "snapshot thumbnail" : thumbnail ? "snapshot (no thumbnail kept)" : "snapshot"
                Output.error("\(what): \(picture.width)x\(picture.height), \(Output.size(UInt64(picture.png.count))), written to \(snapshotPath)\n")
            }
        }
    }
}

struct Actions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "actions",
        abstract: "The actions a session's scene takes (or an app's, with --app), as its manifest declares them, for `wmctl send`.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String?
    @Option(help: "An app instead of a session.", completion: LiveCompletion.apps) var app: String?

    func validate() throws {
        guard (session == nil) != (app == nil) else { throw ValidationError("name a session or --app APP, one of them") }
    }

    func run() async throws {
        let global = self.global
        let (session, app) = (self.session, self.app)
        try await global.withBroker { client in
            let appID: String
            if let app {
                appID = app
            } else {
                guard case .session(let info) = try await client.request(.show(.with { $0.sessionID = session ?? "" })) else {
                    throw BrokerError.unexpectedReply
                }
                appID = info.appID
            }
            guard case .apps(let reply) = try await client.request(.apps(.init())) else { throw BrokerError.unexpectedReply }
            guard let declared = reply.apps.first(where: { $0.id == appID }) else {
                throw BrokerError(.unknownApp, "no app '\(appID)' is installed; `wmctl apps` lists them")
            }
            global.emit(.list(declared.actions.map {
                .dictionary(["name": .string($0.name), "arguments": .list($0.arguments.map { .string($0) }), "description": .string($0.description_p)])
            })) {
                guard !declared.actions.isEmpty else { return "(app '\(appID)' declares no actions in its manifest)" }
                // As `send` takes it, then what it does, indented: descriptions are sentences.
                return declared.actions.map { action in
                    ([action.name] + action.arguments.map { "--arg \($0)=..." }).joined(separator: " ")
                        + (action.description_p.isEmpty ? "" : "\n    " + action.description_p)
                }.joined(separator: "\n")
            }
        }
    }
}

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "send", abstract: "Send an action to a connected scene.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix of 4+ characters).", completion: LiveCompletion.sessions) var session: String
    @Argument(help: "The action's name (`wmctl actions SESSION` lists what the scene's app declares).", completion: LiveCompletion.actions)
    var action: String
    @Option(help: "An argument KEY=VALUE. Repeatable.") var arg: [String] = []

    func run() async throws {
        let global = self.global
        let arguments = try parsePairs(arg, option: "--arg")
        let request = ControlRequest.send(.with {
            $0.sessionID = session
            $0.action = action
            $0.arguments = PlistValue.wire(dictionary: arguments)
        })
        try await global.withBroker { client in
            guard case .actionResult(let result) = try await client.request(request) else { throw BrokerError.unexpectedReply }
            let value = result.hasValue ? ((try? PlistValue(wire: result.value, path: "value")) ?? .null) : .null
            var object: [String: PlistValue] = ["result": .string(result.performed ? "performed" : "declined"), "value": value]
            if !result.performed { object["reason"] = .string(result.declineReason) }
            global.emit(.dictionary(object)) {
                result.performed ? "performed: \(Output.describe(value))" : "declined: \(result.declineReason)"
            }
            // A script learns that the scene said no from the status, as from grep's.
            if !result.performed { throw CLIExit(code: 1) }
        }
    }
}
