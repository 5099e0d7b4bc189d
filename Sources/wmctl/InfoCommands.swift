import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "The broker's version, pid, uptime and counts.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let global = self.global
        try await global.withBroker { client in
            guard case .status(let status) = try await client.request(.status(.init())) else { throw BrokerError.unexpectedReply }
            global.emit(Output.status(status)) {
                let prewarmed = status.prewarmed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                return "windowbroker \(status.version), pid \(status.pid), up \(Output.duration(status.uptimeSeconds)): \(Output.count(status.sessions, "session")), \(status.workers) running, "
                    + "pressure \(Output.pressureName(status.pressureLevel)), \(status.reclaimedCount) reclaimed"
                    + (prewarmed.isEmpty ? "" : ", prewarmed: \(prewarmed)")
                    + (status.zygotes.isEmpty ? "" : ", zygotes: " + status.zygotes.sorted { $0.key < $1.key }.map { "\($0.key) (pid \($0.value))" }.joined(separator: ", "))
                    + status.warnings.map { "\nWARNING: \($0)" }.joined()
            }
        }
    }
}

struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "apps", abstract: "The installed apps (from their manifests).")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let global = self.global
        try await global.withBroker { client in
            guard case .apps(let reply) = try await client.request(.apps(.init())) else { throw BrokerError.unexpectedReply }
            global.emit(.list(reply.apps.map {
                .dictionary([
                    "id": .string($0.id),
                    "name": .string($0.name),
                    "supportsMultipleScenes": .bool($0.supportsMultipleScenes),
                    "activityTypes": .list($0.activityTypes.map { .string($0) }),
                    "commandErrors": .list($0.commandErrors.map { .string($0) }),
                ].merging($0.zygote.isEmpty ? [:] : ["zygote": .string($0.zygote)]) { _, new in new })
            })) {
                (reply.apps.isEmpty ? "(no apps are installed)" : Output.table(["ID", "NAME", "MULTIPLE", "ACTIVITY TYPES"], reply.apps.map {
                    [$0.id, $0.name, $0.supportsMultipleScenes ? "yes" : "no", $0.activityTypes.joined(separator: ",")]
                })) + reply.apps.filter { !$0.zygote.isEmpty }.map { "\n\($0.id): zygote \($0.zygote)" }.joined()
                    + reply.broken.map { "\nskipped \($0.file): field '\($0.field)': \($0.reason)" }.joined()
                    + reply.warnings.map { "\nwarning \($0.file): field '\($0.field)': \($0.reason)" }.joined()
            }
            // With --json the skipped ones and the warnings go to stderr: the list keeps its
            // shape (apps.schema.json).
            if global.json {
                for broken in reply.broken {
                    Output.error("wmctl: skipped \(broken.file): field '\(broken.field)': \(broken.reason)\n")
                }
                for warning in reply.warnings {
                    Output.error("wmctl: warning \(warning.file): field '\(warning.field)': \(warning.reason)\n")
                }
            }
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "watch", abstract: "Print lifecycle events as they happen, one per line.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Stop after this many events.") var count: Int?
    @Option(help: "Stop after this many seconds.") var timeout: Double?
    @Option(help: "First the newest events from before now that match, up to this many (the broker keeps 64).") var recent: Int = 0
    @Option(name: .customLong("session"), help: "Only events of this session (repeatable).", completion: LiveCompletion.sessions)
    var sessions: [String] = []
    @Option(name: .customLong("app"), help: "Only events of this app (repeatable).", completion: LiveCompletion.apps) var apps: [String] = []
    @Option(name: .customLong("event"), help: "Only events of this name, e.g. didBecomeActive, reclaimed (repeatable).",
            completion: LiveCompletion.eventNames) var events: [String] = []

    func run() async throws {
        let global = self.global
        let count = self.count
        let timeout = self.timeout
        // The broker applies the filters: nothing else is sent.
        let request = ControlRequest.watch(.with {
            $0.sessionIds = sessions
            $0.appIds = apps
            $0.events = events
            $0.recent = UInt32(max(0, min(recent, 64)))
        })
        try await global.withBroker { client in
            guard case .watchStarted = try await client.request(request) else { throw BrokerError.unexpectedReply }
            // On stderr in both modes: a script (or a test) knows from it that nothing is missed from now on.
            Output.error("watching (ctrl-c to stop)\n")
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    var seen = 0
                    for await event in client.events {
                        let line: PlistValue = .dictionary([
                            "time": .string(Output.iso(event.time)),
                            "timestamp": .real((event.time * 1e6).rounded() / 1e6),
                            "session": .string(event.sessionID),
                            "app": .string(event.appID),
                            "event": .string(event.event),
                            "detail": .string(event.detail),
                            "title": .string(event.title),
                        ])
                        if global.json {
                            Output.printJSON(line)
                        } else {
                            // Aligned columns, the session as its short id and title.
                            func column(_ text: String, _ width: Int) -> String {
                                Output.pad(Output.truncate(text, toWidth: width), toWidth: width)
                            }
                            Output.line([
                                Output.localTime(event.time, milliseconds: true), column(event.sessionID.isEmpty ? "-" : String(event.sessionID.prefix(8)), 8),
                                column(event.appID.isEmpty ? "-" : event.appID, 12), column(event.title, 20), column(event.event, 24), event.detail,
                            ].joined(separator: "  ").trimmingSpaces)
                        }
                        seen += 1
                        if let count, seen >= count { return }
                    }
                }
                if let timeout {
                    group.addTask { try? await Task.sleep(for: .milliseconds(Int(timeout * 1000))) }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }
}

struct Logs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "The last lines a scene's processes printed (stdout and stderr), with times and pids; -f follows.",
        discussion: "With --app instead of a session: what the app's last process that failed to start printed (its session may not have been kept).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The session id (or a unique prefix).", completion: LiveCompletion.sessions) var session: String?
    @Option(help: "An app instead of a session: its last failed launch.", completion: LiveCompletion.apps) var app: String?
    @Option(name: [.customShort("n"), .short, .long], help: "How many lines (at most 500 are kept per session); -n as tail and journalctl spell it.") var lines = 50
    @Flag(name: [.customShort("f"), .long], help: "Keep printing new lines as they come (ctrl-c stops), as tail -f; with --json one object per line.")
    var follow = false

    func validate() throws {
        guard (session == nil) != (app == nil) else { throw ValidationError("give a session, or --app APP for the app's last failed launch") }
        guard app == nil || !follow else { throw ValidationError("--follow follows a session, not an app's last failed launch") }
    }

    func run() async throws {
        let global = self.global
        let (session, app, count, follow) = (self.session ?? "", self.app ?? "", self.lines, self.follow)
        try await global.withBroker { client in
            func fetch(_ count: Int) async throws -> [Windowbroker_V1_LogLine] {
                guard case .logs(let reply) = try await client.request(.logs(.with {
                    $0.sessionID = session
                    $0.appID = app
                    $0.lines = UInt32(max(1, count))
                })) else { throw BrokerError.unexpectedReply }
                return reply.lines
            }
            func object(_ line: Windowbroker_V1_LogLine) -> PlistValue {
                .dictionary(["time": .string(Output.iso(line.time)), "pid": .integer(Int64(line.pid)), "text": .string(line.text),
                             "stream": .string(line.stream)])
            }
            func human(_ line: Windowbroker_V1_LogLine) -> String {
                "\(Output.localTime(line.time, milliseconds: true))  [\(line.pid)\(line.stream == "stderr" ? " stderr" : "")]  \(line.text)"
            }
            var shown = try await fetch(count)
            if global.json, !follow {
                global.emit(.list(shown.map(object))) { "" }
                return
            }
            if shown.isEmpty, !follow {
                Output.line(app.isEmpty ? "(no output from this session's scene processes)" : "(no process of \(app) failed to start since the broker started, or it printed nothing)")
            }
            for line in shown { global.json ? Output.printJSON(object(line)) : Output.line(human(line)) }
            guard follow else { return }
            // Follows by asking again: what came after the last line shown is new.
            while true {
                try await Task.sleep(for: .milliseconds(300))
                let recent = try await fetch(500)  // all the broker keeps per session
                let fresh: ArraySlice<Windowbroker_V1_LogLine>
                if let last = shown.last, let at = recent.lastIndex(of: last) {
                    fresh = recent[(at + 1)...]
                } else {
                    fresh = recent[...].drop { line in shown.last.map { line.time <= $0.time } ?? false }
                }
                for line in fresh { global.json ? Output.printJSON(object(line)) : Output.line(human(line)) }
                if let last = fresh.last { shown = [last] }
            }
        }
    }
}

struct Ping: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ping", abstract: "Measure control round trips.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "How many round trips.") var count = 10

    func validate() throws {
        guard count > 0 else { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        let global = self.global
        let count = self.count
        try await global.withBroker { client in
            var latency = LatencySamples(expected: count)
            for i in 0..<count {
                let payload = Data("ping \(i)".utf8)
                let reply = try await latency.time { try await client.request(.ping(.with { $0.payload = payload })) }
                guard case .ping(let pong) = reply, pong.payload == payload else {
                    throw BrokerError(.malformedFrame, "the broker's pong did not echo the ping")
                }
            }
            let figures = latency.summary
            func round(_ v: Double) -> PlistValue { .real((v * 10).rounded() / 10) }
            global.emit(.dictionary([
                "count": .integer(Int64(count)),
                "minMicros": round(figures.min),
                "p50Micros": round(figures.p50),
                "p99Micros": round(figures.p99),
                "maxMicros": round(figures.max),
                "meanMicros": round(figures.mean),
            ])) {
                "\(count) round trips: " + [("min", figures.min), ("p50", figures.p50), ("p99", figures.p99),
                                            ("max", figures.max), ("mean", figures.mean)]
                    .map { "\($0.0) \(Output.latency(micros: $0.1))" }.joined(separator: ", ")
            }
        }
    }
}

struct Display: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "display",
        abstract: "Show the Wayland display the broker gives its scenes, or set it.",
        discussion: """
            With NAME (wayland-1, or a socket's path), scenes launched from now on and the switcher \
            use that display, and the scenes a compositor took away come back on it once a compositor \
            answers there: for a compositor that came back under another name. Scenes still on the \
            old display stay there until they next launch.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The display to use: a socket name in the broker's XDG_RUNTIME_DIR, or an absolute path.") var name: String?

    func run() async throws {
        let global = self.global
        let name = self.name
        try await global.withBroker { client in
            guard case .display(let reply) = try await client.request(.display(.with { $0.waylandDisplay = name ?? "" })) else {
                throw BrokerError.unexpectedReply
            }
            global.emit(.dictionary([
                "waylandDisplay": .string(reply.waylandDisplay),
                "path": .string(reply.path),
                "answers": .bool(reply.answers),
                "waiting": .integer(Int64(reply.waiting)),
            ])) {
                guard !reply.path.isEmpty else { return "no display: scenes run headless" }
                let state = reply.answers ? "a compositor answers" : "no compositor answers"
                let waiting = reply.waiting == 0 ? "" : "; \(reply.waiting) scene\(reply.waiting == 1 ? "" : "s") to put back when one does"
                return "display \(reply.path): \(state)\(waiting)"
            }
        }
    }
}
