/// wmctl: the command line for windowbroker, a thin client of IPCWire.
///
/// Exit codes: 0 success; 1 the broker refused (message on stderr, or with --json an
/// `{"error": {"code", "message"}}` object on stdout); 2 usage; 3 the broker cannot be reached.
import ArgumentParser
import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// wmctl's two steps, as main.swift runs them: the command line is parsed before any task or
/// thread starts, then the command runs.
enum WMCtlMain {
    /// The command the line asks for. `--help`, `--version`, a shell's completion request and
    /// a usage error end here, with what they print, so they never start the event loop.
    static func parse() -> ParsableCommand {
        let arguments = hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))
        do {
            return try CompletionScriptProbe.skipped(unlessAskedIn: arguments) { try WMCtl.parseAsRoot(arguments) }
        } catch {
            fail(error)
        }
    }

    static func run(_ command: ParsableCommand) async {
        do {
            var command = command
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            fail(error)
        }
    }

    private static func fail(_ error: any Error) -> Never {
        if let exit = error as? CLIExit { Glibc.exit(exit.code) }
        let arguments = Array(CommandLine.arguments.dropFirst())
        let code = WMCtl.exitCode(for: error)
        if code == .success {
            Output.line(WMCtl.fullMessage(for: error))  // --help, --version
            Glibc.exit(0)
        }
        let message = suggestSubcommand(arguments) ?? WMCtl.fullMessage(for: error)
        if arguments.contains("--json") {
            // Scripts asked for JSON: a usage error is JSON too (code "usage", exit 2).
            let first = message.split(separator: "\n").first.map(String.init) ?? message
            Output.printJSON(.dictionary(["error": .dictionary([
                "code": .string("usage"), "message": .string(first.replacing("Error: ", with: "")),
            ])]))
        } else {
            Output.error(((message.hasPrefix("'") ? "wmctl: " : "") + message + "\n"))
        }
        Glibc.exit(2)
    }
}

/// For a mistyped subcommand: the closest one ("did you mean 'sessions'?"), like git.
func suggestSubcommand(_ arguments: [String]) -> String? {
    let hoisted = hoistingGlobalOptions(arguments)
    guard let typed = hoisted.first, !typed.hasPrefix("-") else { return nil }
    let names = WMCtl.configuration.subcommands.compactMap { $0.configuration.commandName ?? String(describing: $0).lowercased() }
    guard !names.contains(typed) else { return nil }
    func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(1, b.count) where !b.isEmpty {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
    let best = names.map { ($0, distance(typed, $0)) }.min { $0.1 < $1.1 }
    let hint = best.flatMap { $0.1 <= max(2, typed.count / 3) ? "; did you mean '\($0.0)'?" : nil } ?? ""
    return "'\(typed)' is not a wmctl command\(hint) (`wmctl --help` lists them)"
}

/// Lets the global options stand before the subcommand too (`wmctl --json --socket P status`):
/// they are moved to the end, where every (leaf) subcommand declares them.
func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
    var leading: [String] = []
    var index = 0
    while index < arguments.count, arguments[index].hasPrefix("-") {
        let argument = arguments[index]
        if argument == "--socket", index + 1 < arguments.count {
            leading += [argument, arguments[index + 1]]
            index += 2
        } else if argument == "--json" || argument == "--pretty" || argument.hasPrefix("--socket=") {
            leading.append(argument)
            index += 1
        } else {
            return arguments
        }
    }
    guard index < arguments.count else { return arguments }
    return Array(arguments[index...]) + leading
}

struct CLIExit: Error {
    var code: Int32
}

struct WMCtl: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CompletionScriptProbe.isSkipped ? configurationSkippingCompletionScriptProbe : plainConfiguration
    }

    private static let plainConfiguration = CommandConfiguration(
        commandName: "wmctl",
        abstract: "Drive the windowbroker: open scenes, move them between foreground and background, reclaim and restore them.",
        discussion: """
            Every command also takes these options, before or after its name:
              --socket PATH  the control socket (default: $WINDOWBROKER_SOCKET,
                             else $XDG_RUNTIME_DIR/windowbroker/control.sock)
              --json         JSON instead of text (schemas: docs/schema)
              --pretty       indented JSON (implies --json)
            Exit status: 0 done; 1 refused, declined, unhandled or no match;
            2 usage; 3 the broker cannot be reached.
            """,
        version: WireProtocol.versionLine,
        subcommands: [
            Status.self, Apps.self, Open.self, Activate.self, Background.self, Reclaim.self, Close.self, Refresh.self,
            Sessions.self, Show.self, Send.self, Actions.self, Post.self, Defaults.self, Search.self, Menu.self, Commands.self, Key.self, Logs.self, Top.self, Watch.self, Ping.self, Pressure.self, Switcher.self, Overlay.self, Display.self,
        ])

    /// The same command with a super-command name, which is what tells ArgumentParser to skip
    /// its completion-script probe (see `CompletionScriptProbe`). Only the parser ever sees it:
    /// help and usage are written after parsing, from `plainConfiguration`.
    private static let configurationSkippingCompletionScriptProbe: CommandConfiguration = {
        var configuration = plainConfiguration
        configuration._superCommandName = "wmctl-parse"
        return configuration
    }()
}

/// ArgumentParser parses every command line twice more before parsing it as ours: once as
/// `--generate-completion-script <shell>` and once as the bare flag. Those two probes build
/// argument sets for two commands of its own, and each type they reflect on costs the Swift
/// runtime a scan of all 6,100 protocol conformance records in the binary (Linux has no
/// prebuilt table): a fifth of `wmctl --version`'s instructions, 0.3 ms of `wmctl status`'s
/// 4.6 ms. The probe cannot succeed on a line without that flag, so on such a line wmctl
/// parses with the configuration that has ArgumentParser skip it.
enum CompletionScriptProbe {
    /// Read by `WMCtl.configuration`; set only around the parse, on the main thread, before
    /// any task or other thread exists.
    nonisolated(unsafe) private(set) static var isSkipped = false

    static func skipped<T>(unlessAskedIn arguments: [String], _ parse: () throws -> T) rethrows -> T {
        isSkipped = !arguments.contains { $0.hasPrefix("--generate-completion-script") }
        defer { isSkipped = false }
        return try parse()
    }
}

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    /// The xdg-activation token a launcher handed wmctl (the standard XDG_ACTIVATION_TOKEN
    /// convention): passed on with open and activate, so the scene's window may take the focus.
    static var activationToken: String { ProcessFacts.environment("XDG_ACTIVATION_TOKEN") ?? "" }

    @Option(help: "The broker's control socket (default: $WINDOWBROKER_SOCKET, else $XDG_RUNTIME_DIR/windowbroker/control.sock).")
    var socket: String?

    @Flag(name: .customLong("json"), help: "Print JSON instead of text.")
    var jsonFlag = false

    @Flag(help: "Indented JSON, one key per line (implies --json).")
    var pretty = false

    /// JSON out: --json, or --pretty (which only makes sense for JSON).
    var json: Bool { jsonFlag || pretty }

    var socketPath: String { BrokerClient.socketPath(given: socket) }

    /// Connects, runs `body`, and turns failures into the documented exit codes.
    func withBroker(_ body: @Sendable (BrokerClient) async throws -> Void) async throws {
        do {
            try await BrokerClient.withConnection(socketPath: socketPath, clientName: "wmctl", body)
        } catch let error as BrokerError {
            if json {
                var object: [String: PlistValue] = ["code": .string(error.code.rawValue), "message": .string(error.message)]
                if let retry = error.retryAfterSeconds { object["retryAfterSeconds"] = .real((retry * 10).rounded() / 10) }
                Output.printJSON(.dictionary(["error": .dictionary(object)]))
            } else {
                Output.error("wmctl: \(error.message)\n")
            }
            throw CLIExit(code: error.code == .brokerUnreachable ? 3 : 1)
        }
    }

    func emit(_ value: PlistValue, human: () -> String) {
        if json { Output.printJSON(value, pretty: pretty) } else { Output.line(human()) }
    }

    /// The reply of open / activate / background / reclaim / close.
    func emit(_ reply: Windowbroker_V1_SessionStateReply, verb: String, showingCreated: Bool) {
        var object: [String: PlistValue] = [
            "session": .string(reply.sessionID),
            "state": .string(Output.stateName(reply.state)),
            "detail": .string(reply.detail),
        ]
        if showingCreated { object["created"] = .bool(reply.created) }
        switch reply.launch {
        case .existing: object["launch"] = .string("existing")
        case .spawned: object["launch"] = .string("spawned")
        case .prewarmed: object["launch"] = .string("prewarmed")
        case .forked: object["launch"] = .string("forked")
        default: break
        }
        if reply.launch != .unspecified {
            object["presentation"] = .string(reply.presentation == .prominent ? "prominent" : "standard")
        }
        emit(.dictionary(object)) {
            "\(verb) \(reply.sessionID) (\(Output.stateName(reply.state)))" + (reply.detail.isEmpty ? "" : "\n  \(reply.detail)")
        }
    }
}


/// Round-trip times in microseconds, for the commands that measure (`ping`, `search --repeat-count`).
/// Recorded as they come and sorted once when read: between two round trips the loop only
/// appends. (Kept sorted by insertion, each sample cost a scan and a move of half of those
/// before it: 9% of all samples, wmctl's and the broker's, in a `perf` profile of 20,000 pings.
/// Outside the timed span, but on the CPU the next round trip wants.)
struct LatencySamples {
    private var samples: [Double] = []
    private let clock = ContinuousClock()

    init(expected count: Int) {
        samples.reserveCapacity(count)
    }

    /// Runs `body` and records how long it took.
    mutating func time<T>(_ body: () async throws -> T) async rethrows -> T {
        let started = clock.now
        let result = try await body()
        let elapsed = clock.now - started
        samples.append(Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
        return result
    }

    /// The figures of what was recorded (at least one round trip).
    var summary: LatencySummary { LatencySummary(sorting: samples) }
}

struct LatencySummary {
    let min: Double
    let p50: Double
    let p99: Double
    let max: Double
    let mean: Double

    init(sorting samples: [Double]) {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            sorted[Swift.min(sorted.count - 1, Swift.max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
        }
        min = sorted[0]
        p50 = percentile(0.5)
        p99 = percentile(0.99)
        max = sorted[sorted.count - 1]
        mean = sorted.reduce(0, +) / Double(sorted.count)
    }
}

enum Output {
    static func printJSON(_ value: PlistValue, pretty: Bool = false) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        line(String(decoding: data, as: UTF8.self))
    }

    /// Writes a message to standard error as it is (add the newline).
    static func error(_ text: String) {
        PlainOutput.write(text, to: STDERR_FILENO)
    }

    /// All of standard input.
    static func standardInput() -> [UInt8] {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return data }
            data += chunk[0..<count]
        }
    }

    /// Writes a line unbuffered, so `watch` output reaches pipes as it happens. A reader that
    /// went away (`wmctl watch | grep -m1 ...`, `| head`) ends wmctl quietly with 141, the
    /// status a shell reports for a program stopped by SIGPIPE.
    static func line(_ text: String) {
        if let failure = PlainOutput.write(text + "\n", to: STDOUT_FILENO) {
            exit(failure == EPIPE ? 141 : 1)
        }
    }

    /// Times for people: local, with the zone's offset, so a line copied into a bug report
    /// still says when (`2026-11-23 13:04:05 +01:00`; `.123` with `milliseconds`). JSON has
    /// UTC (`iso`).
    static func localTime(_ seconds: Double, milliseconds: Bool = false) -> String {
        guard seconds > 0 else { return "-" }
        // The C library's local time (TZ, /etc/localtime), as `date` shows it.
        var clock = time_t(seconds.rounded(.down))
        var local = tm()
        localtime_r(&clock, &local)
        let offset = Int(local.tm_gmtoff)
        let zone = (offset < 0 ? "-" : "+") + String(printf: "%02d:%02d", abs(offset) / 3600, abs(offset) % 3600 / 60)
        let fraction = milliseconds ? String(printf: ".%03d", Int((seconds * 1000).rounded(.down)) % 1000) : ""
        return String(printf: "%d-%02d-%02d %02d:%02d:%02d", local.tm_year + 1900, local.tm_mon + 1, local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec)
            + fraction + " " + zone
    }

    /// ISO 8601 in UTC with milliseconds, for JSON: `watch` timestamps can time what they record.
    static func iso(_ seconds: Double) -> String {
        seconds == 0 ? "" : Date(timeIntervalSince1970: seconds).formatted(isoWithMilliseconds)
    }

    private static let isoWithMilliseconds = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// A size in the unit people read it in: `512 B`, `3.5 KiB`, `12.5 MiB`, `1.2 GiB`.
    static func size(_ bytes: UInt64) -> String {
        switch bytes {
        case ..<1024: "\(bytes) B"
        case ..<(1 << 20): String(printf: "%.1f KiB", Double(bytes) / 1024)
        case ..<(1 << 30): String(printf: "%.1f MiB", Double(bytes) / 1_048_576)
        default: String(printf: "%.1f GiB", Double(bytes) / 1_073_741_824)
        }
    }

    /// A short time in the unit people read it in: `85 µs`, `2.5 ms`, `1.20 s`.
    static func latency(micros: Double) -> String {
        switch micros {
        case ..<1000: String(printf: "%.0f µs", micros)
        case ..<1_000_000: String(printf: "%.1f ms", micros / 1000)
        default: String(printf: "%.2f s", micros / 1_000_000)
        }
    }

    /// A session's memory for people: `-` without a process, `…` before its first reading
    /// (the broker reads a new process's PSS soon after it starts, not at once).
    static func pss(_ info: Windowbroker_V1_SessionInfo) -> String {
        info.pid == 0 ? "-" : info.pssBytes == 0 ? "…" : size(info.pssBytes)
    }

    /// A count with its noun: `1 session`, `3 sessions`.
    static func count(_ n: some BinaryInteger, _ noun: String) -> String {
        "\(n) \(noun)\(n == 1 ? "" : "s")"
    }

    /// A span as people say it: `42s`, `1min 14s`, `3h 2min`, `2d 5h`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded())
        let (days, hours, minutes, rest) = (total / 86_400, total / 3_600 % 24, total / 60 % 60, total % 60)
        if days > 0 { return "\(days)d \(hours)h" }
        if hours > 0 { return "\(hours)h \(minutes)min" }
        if minutes > 0 { return rest == 0 ? "\(minutes)min" : "\(minutes)min \(rest)s" }
        return "\(rest)s"
    }

    /// How long ago a time was: `just now`, `2 min ago`, `3h ago`, `5 days ago`.
    static func ago(_ time: Double, now: Double = Date().timeIntervalSince1970) -> String {
        let seconds = max(0, now - time)
        switch seconds {
        case ..<10: return "just now"
        case ..<60: return "\(Int(seconds))s ago"
        case ..<3_600: return "\(Int(seconds / 60)) min ago"
        case ..<86_400: return "\(Int(seconds / 3_600))h ago"
        default: return "\(Int(seconds / 86_400)) days ago"
        }
    }

    static func stateName(_ state: Windowbroker_V1_SceneState) -> String {
        SceneState(wire: state).rawValue
    }

    static func session(_ info: Windowbroker_V1_SessionInfo) -> [String: PlistValue] {
        [
            "id": .string(info.id),
            "app": .string(info.appID),
            "title": .string(info.title),
            "configuration": .string(info.configuration),
            "state": .string(stateName(info.state)),
            "key": .bool(info.key),
            "pid": info.pid == 0 ? .null : .integer(Int64(info.pid)),
            "lastActiveAt": .string(iso(info.lastActiveAt)),
            "createdAt": .string(iso(info.createdAt)),
            "hasRestoration": .bool(info.restorationSaved),
            "hasSnapshot": .bool(info.snapshotKept),
            "lastDisconnect": info.lastDisconnect.isEmpty ? .null : .string(info.lastDisconnect),
            "launchCount": .integer(Int64(info.launchCount)),
            "pss": info.pid == 0 ? .null : .integer(Int64(info.pssBytes)),
            "presentation": .string(info.presentation == .prominent ? "prominent" : "standard"),
            "requestedBy": info.requestedBy.isEmpty ? .null : .string(info.requestedBy),
            "crashLoopRetryAfterSeconds": info.crashLoopRetryAfterSeconds > 0 ? .real((info.crashLoopRetryAfterSeconds * 10).rounded() / 10) : .null,
        ]
    }

    /// A plain table: columns padded to their widest cell, in terminal columns (a CJK
    /// character or an emoji takes two). With `flexible`, that column is cut (with …) so a
    /// line fits `maxWidth`.
    /// Cells are text for people: control characters in them are escapes, so a title cannot
    /// clear the screen, retitle the terminal or forge a row.
    static func table(_ header: [String], _ rows: [[String]], flexible: Int? = nil, maxWidth: Int = 100) -> String {
        var all = ([header] + rows).map { $0.map(\.escapingControlCharacters) }
        var widths = header.indices.map { column in all.map { displayWidth($0[column]) }.max() ?? 0 }
        if let flexible {
            let others = widths.enumerated().filter { $0.offset != flexible }.reduce(0) { $0 + $1.element } + 2 * (widths.count - 1)
            let room = max(displayWidth(header[flexible]), maxWidth - others)
            if widths[flexible] > room {
                widths[flexible] = room
                for index in all.indices { all[index][flexible] = truncate(all[index][flexible], toWidth: room) }
            }
        }
        return all.map { row in
            row.enumerated().map { pad($0.element, toWidth: widths[$0.offset]) }
                .joined(separator: "  ").trimmingSpaces
        }.joined(separator: "\n")
    }

    /// Terminal columns a string takes (wcwidth's idea per grapheme): East Asian wide and
    /// full-width characters and emoji take 2, combining marks and joiners 0.
    static func displayWidth(_ text: String) -> Int {
        text.reduce(0) { $0 + width(of: $1) }
    }

    /// East Asian wide and full-width blocks, and the emoji blocks.
    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
        0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
        0x1F900...0x1F9FF, 0x20000...0x3FFFD,
    ]

    static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.contains(where: { $0.properties.isEmojiPresentation }) || scalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        if wideRanges.contains(where: { $0.contains(first.value) }) { return 2 }
        switch first.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format, .control: return 0
        default: return 1
        }
    }

    /// Pads with spaces to `width` terminal columns (nothing when it is wider already).
    static func pad(_ text: String, toWidth width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - displayWidth(text)))
    }

    /// Cuts to at most `width` columns, ending in … when something was cut.
    static func truncate(_ text: String, toWidth width: Int) -> String {
        guard displayWidth(text) > width else { return text }
        var out = ""
        var used = 0
        for character in text {
            let next = self.width(of: character)
            if used + next > width - 1 { break }
            out.append(character)
            used += next
        }
        return out + "…"
    }

    static func describe(_ value: PlistValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}

/// Turns `K=V` pairs into a dictionary of strings.
func parsePairs(_ pairs: [String], option: String) throws -> [String: PlistValue] {
    var out: [String: PlistValue] = [:]
    for pair in pairs {
        guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
            throw ValidationError("\(option) takes KEY=VALUE, not '\(pair)'")
        }
        out[String(pair[..<eq])] = .string(String(pair[pair.index(after: eq)...]))
    }
    return out
}
