/// windowbrokerd: the thin executable around WindowBroker: flags, logging, service lifecycle.
import ArgumentParser
import Foundation
import IPCWire
import Logging
import ServiceLifecycle
import WindowBroker

/// Parsed and run by main.swift once the event loops run every task.
struct WindowBrokerDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "windowbrokerd",
        abstract: "The windowbroker daemon: one worker process per scene, persistent sessions, state restoration.",
        version: WireProtocol.versionLine)

    @Option(name: .customLong("apps-dir"), help: "A directory of app manifests (*.json). Repeatable. Default: $XDG_DATA_HOME/windowbroker/apps, each of $XDG_DATA_DIRS, then share/windowbroker/apps of the prefix this broker is installed in.")
    var appsDirectories: [String] = []

    @Option(name: .customLong("state-dir"), help: "Where state.sqlite lives. Default: $XDG_STATE_HOME/windowbroker.")
    var stateDirectory: String?

    @Option(name: .customLong("runtime-dir"), help: "Where control.sock lives (0700). Default: $XDG_RUNTIME_DIR/windowbroker.")
    var runtimeDirectory: String?

    @Option(help: "Scenes in the foreground at once.")
    var maxForeground = 2

    @Option(help: "Running scene processes at once.")
    var maxWorkers = 64

    @Option(help: "How long a reconnecting scene may take to restore its interaction state (5, 5s, 300ms, 1min).")
    var restorationTimeout = TimeSpan(seconds: 5)

    @Option(help: "How long a scene may take to answer any other lifecycle call (5s, 300ms, ...).")
    var workerTimeout = TimeSpan(seconds: 5)

    @Option(help: "How long a new scene process may take to start and say Hello (10s, ...).")
    var launchTimeout = TimeSpan(seconds: 10)

    @Option(help: "The whole of a graceful stop, from SIGTERM: scenes not saved by then are reported and stopped. Keep it under the unit's TimeoutStopSec (45s, ...).")
    var stopTimeout = TimeSpan(seconds: 45)

    @Option(help: "A control connection with no request for this long is closed; watchers excepted (60s, 5min, ...).")
    var controlIdleTimeout = TimeSpan(seconds: 60)

    @Option(help: "A control client that does not read its answer within this long is disconnected (5s, ...).")
    var replyWriteTimeout = TimeSpan(seconds: 5)

    @Option(help: "A configuration file: every flag as `key = value` (default: $XDG_CONFIG_HOME/windowbroker/windowbrokerd.conf when it exists; flags win).")
    var config: String?

    @Flag(help: "Rebuild the search index from the stored activities before serving (it is rebuilt automatically when missing or damaged).")
    var rebuildIndex = false

    enum WorkspaceRestore: String, ExpressibleByArgument, CaseIterable {
        case auto, always, never
    }

    @Option(help: "Put back the scenes that were on screen at the last stop, the key one last: auto (when there is a display, WAYLAND_DISPLAY), always, never.")
    var restoreWorkspace = WorkspaceRestore.auto

    enum SessionBusUse: String, ExpressibleByArgument, CaseIterable {
        case auto, off
    }

    @Option(help: "Serve org.windowbroker.Broker1 on the D-Bus session bus: auto (when there is one: DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus), off.")
    var dbus = SessionBusUse.auto

    enum CommandKey: String, ExpressibleByArgument, CaseIterable {
        case `super`, ctrl, alt, none
    }

    @Option(help: "Held alone over a scene's window, this key shows the app's commands (the command overlay): super, ctrl, alt, none.")
    var commandKey = CommandKey.super

    @Option(help: "The system UI program that shows the switcher and the command overlay (default: windowbroker-ui beside windowbrokerd).", completion: .file())
    var systemUI: String?

    @Option(help: "Updates queued for one scene before they are dropped for a single updatesDropped notice.")
    var updateQueueLimit = 256

    @Option(help: "How long the broker waits for a scene to acknowledge an update before sending the next (5s, ...).")
    var updateAckTimeout = TimeSpan(seconds: 5)

    @Option(help: "Failed launches or crashes of one app within --start-limit-interval that put it in a crash loop.")
    var startLimitBurst = 5

    @Option(help: "The window --start-limit-burst counts in; the first refusal lasts this long, doubling in a row (10s, 1min, ...).")
    var startLimitInterval = TimeSpan(seconds: 10)

    @Option(help: "Scenes that save and stop at once during reclaim and shutdown. Default: the number of CPUs.")
    var reclaimConcurrency: Int?

    @Option(help: "Memory all workers together may use (PSS), e.g. 512M or 2G. Default: no budget.")
    var memoryBudget: String?

    @Option(help: "The PSI file to read (kernel format). Tests point it at a file of their own.")
    var psiPath = "/proc/pressure/memory"

    @Option(help: "Time between memory samples (1s, 100ms, ...).")
    var pressureInterval = TimeSpan(seconds: 1)

    @Option(help: "PSI 'some' avg10 percentage (0-100) that means warning (70 ms stall per second = 7).")
    var psiWarning = Percentage(7.0)

    @Option(help: "PSI 'some' avg10 percentage (0-100) that means critical.")
    var psiCriticalSome = Percentage(40.0)

    @Option(help: "PSI 'full' avg10 percentage (0-100) that means critical (700 ms per second = 70).")
    var psiCriticalFull = Percentage(70.0)

    @Option(help: "How long the inputs must stay calm before the pressure level steps down (3s, ...).")
    var pressureCooldown = TimeSpan(seconds: 3)

    @Option(help: "MemAvailable below this is critical (twice it: warning), e.g. 64M; 0 turns it off.")
    var memAvailableFloor = "64M"

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Option(help: "stderr or journald (default: journald when started by systemd with JOURNAL_STREAM, else stderr).")
    var log: String?

    /// Counts must be whole numbers in range: a negative or absurd value is a usage error
    /// naming the flag, not a value clamped in silence.
    func validate() throws {
        let counts: [(String, Int?, ClosedRange<Int>)] = [
            ("--max-foreground", maxForeground, 1...1024), ("--max-workers", maxWorkers, 1...65_536),
            ("--update-queue-limit", updateQueueLimit, 1...1_000_000), ("--start-limit-burst", startLimitBurst, 1...10_000),
            ("--reclaim-concurrency", reclaimConcurrency, 1...1024),
        ]
        for (flag, value, range) in counts {
            if let value, !range.contains(value) {
                throw ValidationError("\(flag) takes a whole number from \(range.lowerBound) to \(range.upperBound), not \(value)")
            }
        }
        // A zero wait fails everything it bounds (every open, with --worker-timeout 0s).
        let spans: [(String, TimeSpan)] = [
            ("--restoration-timeout", restorationTimeout), ("--worker-timeout", workerTimeout), ("--launch-timeout", launchTimeout),
            ("--stop-timeout", stopTimeout), ("--control-idle-timeout", controlIdleTimeout), ("--reply-write-timeout", replyWriteTimeout),
            ("--update-ack-timeout", updateAckTimeout), ("--start-limit-interval", startLimitInterval), ("--pressure-interval", pressureInterval),
        ]
        for (flag, span) in spans where span.duration <= .zero {
            throw ValidationError("\(flag) must be longer than zero (\(span) was given); e.g. 5s or 300ms")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level takes \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not '\(logLevel)'")
        }
        if let log, !["stderr", "journald"].contains(log) {
            throw ValidationError("--log takes stderr or journald, not '\(log)'")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info  // validate() checked it
        let environment = ProcessInfo.processInfo.environment
        var destination = log ?? (environment["JOURNAL_STREAM"] != nil ? "journald" : "stderr")
        // Entries sent to a journal that is not there are lost without a word: say so, and use stderr.
        let journalSocket = "/run/systemd/journal/socket"
        let noJournal = destination == "journald" && !FileManager.default.fileExists(atPath: journalSocket)
        if noJournal { destination = "stderr" }
        switch destination {
        case "journald":
            LoggingSystem.bootstrap { label in
                var handler = JournalLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        case "stderr":
            LoggingSystem.bootstrap { label in
                var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
                handler.logLevel = level
                return handler
            }
        default:
            throw ValidationError("--log takes stderr or journald, not '\(destination)'")
        }
        let logger = Logger(label: "windowbrokerd")
        if noJournal { logger.warning("no journal to log to (\(journalSocket) does not exist); logging to stderr instead") }
        // Restoration data is user data: every file the broker creates is private to the user.
        umask(0o077)

        var configuration = BrokerConfiguration(
            appsDirectories: appsDirectories.isEmpty ? nil : appsDirectories.map(Self.absolute),
            stateDirectory: stateDirectory.map(Self.absolute),
            runtimeDirectory: runtimeDirectory.map(Self.absolute),
            helperDirectory: Self.ownDirectory())
        // The apps installed with this broker (PREFIX/share/windowbroker/apps beside PREFIX/bin),
        // last: an install into a prefix that is not on XDG_DATA_DIRS still finds its own apps.
        if appsDirectories.isEmpty, let own = Self.ownDirectory() {
            let installed = ((own as NSString).appendingPathComponent("../share/windowbroker/apps") as NSString).standardizingPath
            if !configuration.appsDirectories.contains(installed) { configuration.appsDirectories.append(installed) }
        }
        configuration.maxForegroundScenes = max(1, maxForeground)
        configuration.maxLiveWorkers = max(1, maxWorkers)
        configuration.restorationTimeout = restorationTimeout.duration
        configuration.workerTimeout = workerTimeout.duration
        configuration.stopTimeout = stopTimeout.duration
        configuration.updateQueueLimit = max(1, updateQueueLimit)
        configuration.rebuildSearchIndex = rebuildIndex
        configuration.restoreWorkspace = switch restoreWorkspace {
        case .always: true
        case .never: false
        case .auto: !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        }
        configuration.updateAckTimeout = updateAckTimeout.duration
        configuration.sessionBus = dbus == .auto
        configuration.systemUI = systemUI.map(Self.absolute)
        // The scenes watch for the command key themselves (their windows have the keyboard).
        configuration.environment["WINDOWBROKER_COMMAND_KEY"] = commandKey.rawValue
        configuration.controlIdleTimeout = TimeSpan(seconds: max(0.2, controlIdleTimeout.seconds)).duration
        configuration.replyWriteTimeout = TimeSpan(seconds: max(0.1, replyWriteTimeout.seconds)).duration
        configuration.launchTimeout = TimeSpan(seconds: max(0.1, launchTimeout.seconds)).duration
        configuration.startLimitBurst = max(1, startLimitBurst)
        configuration.startLimitInterval = TimeSpan(seconds: max(0.1, startLimitInterval.seconds)).duration
        if let reclaimConcurrency { configuration.reclaimConcurrency = max(1, reclaimConcurrency) }

        // Socket activation: serve the socket systemd passed, or bind the path; never both.
        let listener: ControlServer.Listener = try SocketActivation.controlSocket().map { .inherited(fd: $0) }
            ?? .path(configuration.socketPath)
        var memory = MemoryConfiguration()
        memory.budget = try memoryBudget.map { try Self.bytes($0, option: "--memory-budget") }
        memory.psiPath = psiPath
        memory.sampleInterval = TimeSpan(seconds: max(0.05, pressureInterval.seconds)).duration
        memory.minimumActionInterval = max(memory.sampleInterval * 2, .milliseconds(200))
        memory.thresholds.warningSomePercent = psiWarning.value
        memory.thresholds.criticalSomePercent = psiCriticalSome.value
        memory.thresholds.criticalFullPercent = psiCriticalFull.value
        memory.triggerStall = .microseconds(Int64(psiWarning.value * 10_000))
        memory.thresholds.coolDown = pressureCooldown.duration
        memory.thresholds.memAvailableFloor = try Self.bytes(memAvailableFloor, option: "--mem-available-floor")
        let broker = try await Broker(configuration: configuration, memory: memory, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: await BrokerServices.make(broker: broker, listener: listener, logger: logger),
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch let incomplete as ShutdownIncomplete {
            FileHandle.standardError.write(Data("windowbrokerd: \(incomplete)\n".utf8))
            throw ExitCode(ShutdownIncomplete.exitCode)
        }
    }

    /// "512M", "2G", "300k", "1048576".
    static func bytes(_ text: String, option: String) throws -> UInt64 {
        let units: [Character: UInt64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        var digits = text.uppercased()
        var scale: UInt64 = 1
        if digits.hasSuffix("IB") { digits.removeLast(2) } else if digits.hasSuffix("B") { digits.removeLast() }
        if let last = digits.last, let unit = units[last] {
            scale = unit
            digits.removeLast()
        }
        // Finite and within what a machine can have: "inf" or "1e30" is a usage error, not a crash.
        guard let value = Double(digits), value.isFinite, value >= 0, value * Double(scale) < Double(1 << 62) else {
            throw ValidationError("\(option) takes a size such as 512M or 2G, not '\(text)'")
        }
        return UInt64(value * Double(scale))
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// The directory of this executable: where the bundled reference app lives.
    static func ownDirectory() -> String? {
        guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        return (exe as NSString).deletingLastPathComponent
    }
}
