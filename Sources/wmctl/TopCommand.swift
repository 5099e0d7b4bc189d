import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import IPCWire

/// `wmctl top`: a live view of the broker, refreshed every `--interval`: the broker and memory
/// pressure, every session (state, app, PSS, last active, title) and the latest events.
/// `q` (or ctrl-c) quits; `--once` prints one frame without touching the terminal.
struct Top: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "A live view: sessions with state, app, PSS and last activity, the pressure level and PSI, recent events (q quits).")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print one frame and exit (for scripts and logs); with --json, one object: status, pressure, sessions.") var once = false
    @Option(help: "Seconds between refreshes.") var interval: Double = 1

    func validate() throws {
        guard interval >= 0.1, interval <= 60 else { throw ValidationError("--interval is between 0.1 and 60 seconds") }
    }

    func run() async throws {
        let global = self.global
        let once = self.once
        let interval = self.interval
        try await global.withBroker { client in
            if global.json {
                // Scripts get the same facts as status, pressure and sessions print: one object
                // per frame (one line each, as watch does; --once stops after the first).
                while true {
                    try await Self.snapshot(client, pretty: global.pretty)
                    if once { return }
                    try await Task.sleep(for: .seconds(interval))
                }
            }
            // The events come on a second connection that only watches, the latest few first.
            let recent = RecentEvents()
            let watchRequest = ControlRequest.watch(.with { $0.recent = UInt32(RecentEvents.shown) })
            if once {
                try? await BrokerClient.withConnection(socketPath: global.socketPath, clientName: "wmctl-top") { watch in
                    guard case .watchStarted(let started) = try await watch.request(watchRequest), started.recent > 0 else { return }
                    var left = started.recent
                    for await event in watch.events {
                        await recent.add(event)
                        left -= 1
                        if left == 0 { break }
                    }
                }
                Output.line(try await Self.frame(client, events: await recent.lines, width: Self.terminalWidth()))
                return
            }
            let watcher = Task {
                try? await BrokerClient.withConnection(socketPath: global.socketPath, clientName: "wmctl-top") { watch in
                    guard case .watchStarted = try await watch.request(watchRequest) else { return }
                    for await event in watch.events { await recent.add(event) }
                }
            }
            defer { watcher.cancel() }
            let terminal = RawTerminal()
            defer { terminal.restore() }
            while true {
                let text = try await Self.frame(client, events: await recent.lines, width: Self.terminalWidth())
                // Home, clear, frame: the whole view redrawn in one write.
                Output.line("\u{1B}[H\u{1B}[2J" + text + "\n\nq quits")
                if terminal.waitForQuit(seconds: interval) { return }
            }
        }
    }

    static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col >= 40 { return Int(size.ws_col) }
        return Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 100
    }

    /// One frame as JSON (docs/schema/top.schema.json).
    static func snapshot(_ client: BrokerClient, pretty: Bool) async throws {
        guard case .status(let status) = try await client.request(.status(.init())),
              case .pressure(let pressure) = try await client.request(.pressure(.init())) else { throw BrokerError.unexpectedReply }
        let sessions = try await client.allSessions()
        Output.printJSON(.dictionary([
            "status": Output.status(status),
            "pressure": Output.pressure(pressure),
            "sessions": .list(sessions.map { .dictionary(Output.session($0)) }),
        ]), pretty: pretty)
    }

    static func frame(_ client: BrokerClient, events: [String], width: Int) async throws -> String {
        guard case .status(let status) = try await client.request(.status(.init())),
              case .pressure(let pressure) = try await client.request(.pressure(.init())) else { throw BrokerError.unexpectedReply }
        var sessions = try await client.allSessions()
        let order: [Windowbroker_V1_SceneState] = [.foregroundActive, .foregroundInactive, .launching, .background, .unattached]
        sessions.sort { (order.firstIndex(of: $0.state) ?? 9, -$0.lastActiveAt) < (order.firstIndex(of: $1.state) ?? 9, -$1.lastActiveAt) }
        let header = "windowbroker \(status.version)  pid \(status.pid)  up \(Output.duration(status.uptimeSeconds))  "
            + "\(Output.count(status.sessions, "session")), \(status.workers) running, \(status.reclaimedCount) reclaimed"
        let psi = String(printf: "psi some %.1f%% full %.1f%%", pressure.someAvg10, pressure.fullAvg10)
        let budget: String = pressure.budget == 0 ? "" : " of " + Output.size(pressure.budget)
        let reasons: String = pressure.reasons.isEmpty ? "" : "  (" + pressure.reasons.joined(separator: "; ") + ")"
        let memory = "pressure " + Output.pressureName(pressure.level) + "  " + psi + "  workers " + Output.size(pressure.workersPss) + budget + reasons
        var lines = [header, memory, ""]
        let rows = sessions.prefix(40).map {
            [String($0.id.prefix(8)), Output.stateName($0.state), $0.appID, Output.pss($0),
             Output.ago($0.lastActiveAt), $0.title]
        }
        lines.append(Output.table(["ID", "STATE", "APP", "PSS", "ACTIVE", "TITLE"], rows, flexible: 5, maxWidth: width))
        if sessions.count > 40 { lines.append("… and \(sessions.count - 40) more (wmctl sessions)") }
        if !events.isEmpty {
            lines += ["", "recent events"] + events.map { Output.truncate($0, toWidth: width) }
        }
        return lines.joined(separator: "\n")
    }
}

/// The last few events, newest last, as one line each.
actor RecentEvents {
    static let shown = 8
    private(set) var lines: [String] = []

    func add(_ event: LifecycleEvent) {
        // Time of day only: the frame's header says which day.
        let time = Output.localTime(event.time, milliseconds: true).split(separator: " ").dropFirst().first.map(String.init) ?? ""
        let who = event.sessionID.isEmpty ? "-" : String(event.sessionID.prefix(8))
        // Aligned as `watch` aligns them.
        let title = Output.pad(Output.truncate(event.title.isEmpty ? event.appID : event.title, toWidth: 20), toWidth: 20)
        let line = "\(time)  \(Output.pad(who, toWidth: 8))  \(title)  \(Output.pad(event.event, toWidth: 22))  \(event.detail)"
        lines.append(line.escapingControlCharacters)
        if lines.count > Self.shown { lines.removeFirst(lines.count - Self.shown) }
    }
}

/// The terminal in raw mode (keys arrive at once, not echoed) while the view runs.
final class RawTerminal: @unchecked Sendable {
    private var saved = termios()
    private let active: Bool

    init() {
        active = isatty(STDIN_FILENO) == 1 && tcgetattr(STDIN_FILENO, &saved) == 0
        guard active else { return }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        Output.line("\u{1B}[?25l")  // hide the cursor
    }

    /// Waits up to `seconds` for a key; true when it was q (or the input ended).
    func waitForQuit(seconds: Double) -> Bool {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(seconds * 1000)) > 0 else { return false }
        var byte: UInt8 = 0
        let count = read(STDIN_FILENO, &byte, 1)
        return count <= 0 || byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") || byte == 3
    }

    func restore() {
        guard active else { return }
        tcsetattr(STDIN_FILENO, TCSANOW, &saved)
        Output.line("\u{1B}[?25h")
    }
}
