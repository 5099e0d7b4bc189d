/// windowbroker-ui: the system UI process. The broker starts it on the user's compositor when
/// the switcher or the command overlay is asked for (`wmctl switcher`, the Show All Windows
/// command, holding the command key) and it ends when the user is done with it. It talks to
/// the broker over the control socket like any client, and tells the broker that its first
/// frame is on screen (or why there is none) on the descriptor `WINDOWBROKER_UI_FD` names.
import ArgumentParser
import CLinuxShim
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Glibc
import IPCWire
import SystemUISurface

@main
struct SystemUI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "windowbroker-ui",
        abstract: "The switcher and the command overlay of windowbroker (started by the broker).",
        discussion: "Run by windowbrokerd, not by hand: `wmctl switcher` and `wmctl overlay` ask the broker for them.",
        subcommands: [SwitcherCommand.self, OverlayCommand.self, StandbyCommand.self])
}

/// The process dies with the broker that started it: cards and commands of a broker that is
/// gone would act on nothing. Started by hand (no broker named), it lives on its own.
enum BrokerLifeline {
    static func bind() {
        guard let broker = ProcessInfo.processInfo.environment["WINDOWBROKER_PID"].flatMap(pid_t.init) else { return }
        _ = wb_set_parent_death_signal(SIGTERM)
        // Gone already (this process was reparented before it asked): nothing to show.
        if getppid() != broker { exit(0) }
    }
}

/// A surface the process can show, on a connection it already has.
protocol SurfaceCommand: ParsableCommand {
    /// What `run` shows, given the connection.
    var surface: @Sendable @MainActor (BrokerClient) async throws -> Void { get }
}

struct ConnectionOptions: ParsableArguments {
    @Option(help: "The broker's control socket (default: $WINDOWBROKER_SOCKET).")
    var socket: String?

    var socketPath: String { BrokerClient.socketPath(given: socket) }
}

struct SwitcherCommand: AsyncParsableCommand, SurfaceCommand {
    static let configuration = CommandConfiguration(commandName: "switcher", abstract: "Every session as a card; with --app, one app's (Show All Windows).")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "Only this app's sessions, and a card that opens a new window.") var app: String?

    var surface: @Sendable @MainActor (BrokerClient) async throws -> Void {
        let app = self.app
        return { client in try await Switcher.run(client: client, app: app) }
    }

    func run() async throws {
        try await SystemUIRun.run(socketPath: connection.socketPath, surface)
    }
}

struct OverlayCommand: AsyncParsableCommand, SurfaceCommand {
    static let configuration = CommandConfiguration(commandName: "overlay", abstract: "The commands of a scene's app with their shortcuts, while the command key is held.")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "Whose commands (default: the key scene's).") var session: String?

    var surface: @Sendable @MainActor (BrokerClient) async throws -> Void {
        let session = self.session
        return { client in try await CommandOverlay.run(client: client, session: session) }
    }

    func run() async throws {
        try await SystemUIRun.run(socketPath: connection.socketPath, surface)
    }
}

/// The process the broker keeps ready: the drawing library and its fonts loaded, it waits for
/// one line on its report descriptor (a socket, both ways): the arguments of the surface to
/// show, as a JSON array (`["switcher", "--app", "notes"]`). Then it connects, shows it,
/// reports on the same descriptor, and ends with it as a process started for it does. It
/// connects only once asked: the broker closes a control connection idle for a minute. A
/// started process spent half of the switcher's time to its first frame starting.
struct StandbyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "standby", abstract: "Wait, ready, for the broker to name a surface (the broker keeps one such process).",
        shouldDisplay: false)
    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        BrokerLifeline.bind()
        DrawingLibrary.preloadIfDisplayed()
        // The broker closed its end without naming a surface: nothing to show.
        guard let line = await Readiness.awaitRequest() else { return }
        guard let arguments = try? JSONDecoder().decode([String].self, from: line),
              let command = try? SystemUI.parseAsRoot(arguments) as? any SurfaceCommand else {
            try await SystemUIRun.fail("the broker named no surface this program shows: \(String(decoding: line, as: UTF8.self))")
        }
        try await SystemUIRun.run(socketPath: connection.socketPath, command.surface)
    }
}

/// Connects, runs a surface to its end, and makes sure the broker hears how it went.
enum SystemUIRun {
    static func run(socketPath: String, _ body: @escaping @Sendable @MainActor (BrokerClient) async throws -> Void) async throws {
        BrokerLifeline.bind()
        // The drawing library and its fonts load on a thread of their own while this process
        // connects and asks for what it shows (the first frame waited for both); a standby
        // process started that already.
        DrawingLibrary.preloadIfDisplayed()
        do {
            try await BrokerClient.withConnection(socketPath: socketPath, clientName: "windowbroker-ui", timeout: .seconds(10)) { client in
                try await body(client)
            }
        } catch {
            try await fail((error as? BrokerError)?.message ?? "\(error)")
        }
        await Readiness.report(nil)
    }

    /// Tells the broker why nothing is shown (and standard error, the broker's log), then ends.
    static func fail(_ message: String) async throws -> Never {
        await Readiness.report(SystemUIReport(error: message))
        PlainOutput.write("windowbroker-ui: \(message)\n", to: STDERR_FILENO)
        throw ExitCode(1)
    }
}

/// The descriptor the broker waits on: one report, then closed.
@MainActor
enum Readiness {
    private static var descriptor: Int32? = {
        guard let text = ProcessInfo.processInfo.environment[SystemUIReport.descriptorVariable], let fd = Int32(text), fd >= 0 else { return nil }
        return fd
    }()

    /// The line a standby process waits for (without its newline); nil when the descriptor
    /// ends first or there is none. Read on a thread of Dispatch's, not the main actor's.
    static func awaitRequest() async -> Data? {
        guard let fd = descriptor else { return nil }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var line = Data()
                var byte: UInt8 = 0
                while true {
                    let n = read(fd, &byte, 1)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return continuation.resume(returning: nil) }
                    if byte == 0x0a { return continuation.resume(returning: line) }
                    line.append(byte)
                    // A request is a few arguments; anything larger is not one.
                    if line.count > 64 * 1024 { return continuation.resume(returning: nil) }
                }
            }
        }
    }

    /// Writes `report` (nil: only closes) the first time; later calls do nothing.
    static func report(_ report: SystemUIReport?) {
        guard let fd = descriptor else { return }
        descriptor = nil
        if let report, var line = try? JSONEncoder().encode(report) {
            line.append(0x0a)
            line.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    offset += n
                }
            }
        }
        close(fd)
    }

    /// Reports `surface` shown: item `index` drawn on it is `ids[index]` (nil: not reported,
    /// such as a menu heading).
    @MainActor
    static func reportShown(_ surface: SystemSurface, ids: [String?]) {
        let items = ids.indices.compactMap { index -> SystemUIReport.Item? in
            guard let id = ids[index] else { return nil }
            let frame = surface.frame(ofItem: index)
            return SystemUIReport.Item(id: id, x: frame?.x, y: frame?.y, width: frame?.width, height: frame?.height)
        }
        report(SystemUIReport(width: surface.size.width, height: surface.size.height, items: items))
    }
}

/// Where a surface's run ends: the user chose, left, or what they chose failed.
@MainActor
final class RunEnd {
    private var continuation: CheckedContinuation<Void, any Error>?
    private var ended = false

    func wait() async throws {
        guard !ended else { return }
        try await withCheckedThrowingContinuation { continuation = $0 }
    }

    func end(throwing error: (any Error)? = nil) {
        guard !ended else { return }
        ended = true
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
        continuation = nil
    }
}
