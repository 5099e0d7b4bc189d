import Foundation
import XCTest

/// Starts a real `windowbrokerd` with a private runtime and state directory, runs the real
/// `wmctl` against it, and kills everything it started (by pid) at the end.
final class BrokerHarness {
    let root: String
    let runtimeDirectory: String
    let stateDirectory: String
    let notesDataDirectory: String
    let appsDirectory: String
    var socketPath: String { runtimeDirectory + "/control.sock" }
    private(set) var broker: Process?
    private var logPath: String { root + "/broker.log" }
    var extraArguments: [String]
    /// Every worker pid seen, so teardown can make sure none survives.
    private var seenWorkerPIDs: Set<Int32> = []
    /// The broker's NOTIFY_SOCKET, owned by the test.
    let notify: NotifyListener
    /// Added to the broker's environment (e.g. WATCHDOG_USEC).
    var brokerEnvironment: [String: String] = [:]
    /// A shell line run before the broker replaces the shell (e.g. `ulimit -Sn 1024`).
    var brokerShellPrefix: String?

    /// The package root (Tests/WindowBrokerTests/Harness/BrokerHarness.swift -> ../../..).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["WINDOWBROKER_BIN_DIR"], !dir.isEmpty { return dir }
        return repository.appendingPathComponent(".build/debug").path
    }

    static var repositoryAppsDirectory: String { repository.appendingPathComponent("apps").path }

    init(arguments: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("wb-test-\(UUID().uuidString.prefix(8))").path
        root = base
        runtimeDirectory = base + "/run/windowbroker"
        stateDirectory = base + "/state"
        notesDataDirectory = base + "/notes"
        appsDirectory = base + "/apps"
        extraArguments = arguments
        try FileManager.default.createDirectory(atPath: appsDirectory, withIntermediateDirectories: true)
        for name in ["notes.json", "notes-single.json"] {
            try Self.probeManifest(Self.repositoryAppsDirectory + "/" + name).write(to: URL(fileURLWithPath: appsDirectory + "/" + name))
        }
        notify = try NotifyListener(path: base + "/notify.sock")
        guard FileManager.default.isExecutableFile(atPath: Self.binDirectory + "/windowbrokerd") else {
            throw HarnessError("windowbrokerd is not built in \(Self.binDirectory); run `swift build` (make test does)")
        }
    }

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = root + "/run"
        env["XDG_STATE_HOME"] = root + "/state-home"
        env["XDG_DATA_HOME"] = root + "/data-home"
        // The user's own windowbrokerd.conf must not reach a test broker.
        env["XDG_CONFIG_HOME"] = root + "/config-home"
        env["NOTES_DATA_DIR"] = notesDataDirectory
        env["WINDOWBROKER_SOCKET"] = socketPath
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "WATCHDOG_USEC"] { env[key] = nil }
        // Scenes of a test broker never open windows on the developer's desktop; window tests
        // give their own headless compositor (brokerEnvironment).
        env["WAYLAND_DISPLAY"] = nil
        // Nor on the developer's D-Bus: bus tests give a private dbus-daemon (brokerEnvironment).
        env["DBUS_SESSION_BUS_ADDRESS"] = nil
        return env
    }

    /// Starts the broker and waits for READY=1 on the test's NOTIFY_SOCKET.
    func start() throws {
        let process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: Self.binDirectory + "/windowbrokerd")
        process.arguments = ["--apps-dir", appsDirectory, "--state-dir", stateDirectory, "--runtime-dir", runtimeDirectory,
                             "--log-level", "debug"] + extraArguments
        if let prefix = brokerShellPrefix {
            // The shell execs the broker: same pid, so stopping and killing work as usual.
            process.arguments = ["-c", prefix + "; exec \"$0\" \"$@\"", process.executableURL!.path] + process.arguments!
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
        }
        var env = environment
        env["NOTIFY_SOCKET"] = notify.path
        env.merge(brokerEnvironment) { _, new in new }
        process.environment = env
        readyIndex = notify.messages.count
        try process.run(output: logPath)
        broker = process
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if !process.isRunning { throw HarnessError("windowbrokerd exited with \(process.terminationStatus):\n\(brokerLog)") }
            if notify.messages.dropFirst(readyIndex).contains(where: { $0.assignments.contains("READY=1") }) { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw HarnessError("windowbrokerd sent no READY=1 within 30 s:\n\(brokerLog)")
    }

    /// Where this run's notifications start in `notify.messages`.
    private(set) var readyIndex = 0

    var brokerLog: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    var brokerPID: Int32 { broker?.processIdentifier ?? 0 }

    struct Result {
        var code: Int32
        var stdout: String
        var stderr: String

        func json() throws -> Any {
            try JSONSerialization.jsonObject(with: Data(stdout.utf8), options: [.fragmentsAllowed])
        }
    }

    /// Runs the real wmctl (with --socket) and returns its exit code and output.
    @discardableResult
    func wmctl(_ arguments: String...) -> Result { wmctl(arguments) }

    func wmctl(_ arguments: [String], socket: Bool = true) -> Result {
        run(Self.binDirectory + "/wmctl", (socket ? ["--socket", socketPath] : []) + arguments)
    }

    /// Runs a program with the test's environment to completion; stdout and stderr apart.
    func run(_ executable: String, _ arguments: [String]) -> Result {
        let process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let out = root + "/run-\(UUID().uuidString).out"
        let err = out + ".err"
        defer {
            try? FileManager.default.removeItem(atPath: out)
            try? FileManager.default.removeItem(atPath: err)
        }
        do {
            try process.run(output: out, errors: err)
        } catch {
            return Result(code: -1, stdout: "", stderr: "cannot run \(executable): \(error)")
        }
        process.waitUntilExit()
        return Result(
            code: process.terminationStatus,
            stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// A wmctl started without waiting for it, e.g. a request that is expected to take long.
    final class Running {
        let process: Process
        let out: String
        init(process: Process, out: String) {
            self.process = process
            self.out = out
        }
        var isRunning: Bool { process.isRunning }
        var output: String { (try? String(contentsOfFile: out, encoding: .utf8)) ?? "" }
        var errorOutput: String { (try? String(contentsOfFile: out + ".err", encoding: .utf8)) ?? "" }

        /// Waits for it to exit; returns its exit code and output.
        func wait() -> Result {
            process.waitUntilExit()
            return Result(code: process.terminationStatus, stdout: output, stderr: errorOutput)
        }

        /// Stops it (a watcher); what it printed stays in `output`.
        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        /// Its stdout as JSON lines.
        var jsonLines: [[String: Any]] {
            output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

    /// Runs another windowbrokerd to completion (one expected to refuse or fail); its exit
    /// status and output. One that serves on instead is killed after 10 s, so the test fails
    /// rather than hangs (the kill is cancelled once it exits: no later process is hit).
    func runDaemon(_ arguments: [String]) throws -> (code: Int32, output: String) {
        let process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: Self.binDirectory + "/windowbrokerd")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        remember(pid: process.processIdentifier)
        let pid = process.processIdentifier
        let stopper = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: stopper)
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        stopper.cancel()
        return (process.terminationStatus, output)
    }

    /// `wmctl watch ARGS`, returned once the broker has subscribed it: no later event is missed.
    func startWatch(_ arguments: [String]) throws -> Running {
        try subscribed(try start(wmctl: ["--json", "watch"] + arguments))
    }

    /// Returns a watcher (wmctl's or another client's) once it said on stderr that it is
    /// subscribed: no event after this is missed.
    @discardableResult
    func subscribed(_ watch: Running) throws -> Running {
        try eventually("the watch is subscribed") { watch.errorOutput.contains("watching") }
        return watch
    }

    func start(wmctl arguments: [String]) throws -> Running {
        try start(Self.binDirectory + "/wmctl", ["--socket", socketPath] + arguments)
    }

    /// A program started with the test's environment, not waited for; killed at teardown.
    func start(_ executable: String, _ arguments: [String]) throws -> Running {
        let process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let out = root + "/wmctl-\(UUID().uuidString).out"
        try process.run(output: out, errors: out + ".err")
        remember(pid: process.processIdentifier)
        return Running(process: process, out: out)
    }

    /// wmctl --json ... that must succeed; returns the decoded object.
    func json(_ arguments: String...) throws -> [String: Any] { try json(arguments) }

    func json(_ arguments: [String]) throws -> [String: Any] { try decoded(arguments) }

    func jsonList(_ arguments: String...) throws -> [[String: Any]] { try decoded(arguments) }

    func jsonList(_ arguments: [String]) throws -> [[String: Any]] { try decoded(arguments) }

    /// wmctl --json ... that must be answered, decoded as `T`. An answer that is a no (`send`
    /// declined, `key` unhandled, `search` without hits) exits 1 but is an answer all the same;
    /// a refusal (`{"error": ...}`) is not.
    private func decoded<T>(_ arguments: [String]) throws -> T {
        let result = wmctl(["--json"] + arguments)
        let value = try? result.json()
        let refused = (value as? [String: Any])?["error"] != nil
        guard result.code == 0 || (result.code == 1 && !refused), let value = value as? T else {
            throw HarnessError("wmctl \(arguments.joined(separator: " ")) exited \(result.code): \(result.stdout) \(result.stderr)")
        }
        return value
    }

    /// wmctl --json ... that must fail with exit 1; returns the error code.
    func refusal(_ arguments: String...) throws -> (code: String, message: String) {
        let result = wmctl(["--json"] + arguments)
        guard result.code == 1, let object = try? result.json() as? [String: Any],
              let error = object["error"] as? [String: Any] else {
            throw HarnessError("expected a refusal (exit 1) from wmctl \(arguments.joined(separator: " ").prefix(200)), got \(result.code): \(result.stdout.prefix(500)) \(result.stderr.prefix(500))")
        }
        return (error["code"] as? String ?? "", error["message"] as? String ?? "")
    }

    // MARK: - Scenes

    /// Opens a notes scene and returns its session id.
    func openNote(_ noteID: String, title: String? = nil, app: String = "notes", extra: [String] = []) throws -> String {
        let reply = try json(["open", app, "--activity", "notes.edit", "--title", title ?? noteID, "--info", "noteID=\(noteID)"] + extra)
        guard let session = reply["session"] as? String else { throw HarnessError("no session in \(reply)") }
        return session
    }

    /// The notes scene's own view of itself (its `state` action).
    func noteState(_ session: String) throws -> NoteState {
        let reply = try json("send", session, "state")
        guard let value = reply["value"] as? [String: Any] else { throw HarnessError("no value in \(reply)") }
        let state = NoteState(
            text: value["text"] as? String ?? "",
            cursor: value["cursor"] as? Int ?? -1,
            callbacks: value["callbacks"] as? [String] ?? [],
            discarded: value["discarded"] as? [String] ?? [],
            continued: value["continued"] as? [String] ?? [],
            pid: Int32(value["pid"] as? Int ?? 0),
            isKey: value["isKey"] as? Bool ?? false,
            keyChanges: value["keyChanges"] as? [String] ?? [],
            sizes: value["sizes"] as? [String] ?? [])
        seenWorkerPIDs.insert(state.pid)
        return state
    }

    func session(_ id: String) throws -> [String: Any] {
        guard let found = try jsonList("sessions").first(where: { $0["id"] as? String == id }) else {
            throw HarnessError("session \(id) is not listed")
        }
        if let pid = found["pid"] as? Int { seenWorkerPIDs.insert(Int32(pid)) }
        return found
    }

    func state(_ id: String) throws -> String { try session(id)["state"] as? String ?? "" }

    func type(_ session: String, _ text: String) throws {
        _ = try json("send", session, "type", "--arg", "text=\(text)")
    }

    /// A note whose restoration activity holds `committed`, with ` later` typed after it (the
    /// scene's current activity, committed too, and newer), that hangs when asked for its state
    /// next. Returns the session and its pid.
    func noteThatHangsOnSave(_ noteID: String) throws -> (session: String, pid: Int32) {
        let session = try openNote(noteID)
        try type(session, "committed")
        _ = try json("background", session)
        _ = try json("activate", session)
        try type(session, " later")
        _ = try json("send", session, "hang-on-save")
        return (session, try noteState(session).pid)
    }

    /// Waits until `condition` holds, polling; fails the test after `timeout`.
    func eventually(_ what: String, timeout: TimeInterval = 20, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (try? condition()) == true { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw HarnessError("timed out waiting for: \(what)")
    }

    /// Installs an app manifest and makes the running broker read it (SIGHUP).
    func install(app id: String, manifest: [String: Any]) throws {
        var manifest = manifest
        manifest["id"] = id
        let data = try JSONSerialization.data(withJSONObject: manifest)
        try data.write(to: URL(fileURLWithPath: appsDirectory + "/\(id).json"))
        if let broker, broker.isRunning {
            kill(broker.processIdentifier, SIGHUP)
            try eventually("the broker knows app \(id)") {
                try jsonList("apps").contains { $0["id"] as? String == id }
            }
        }
    }

    /// `manifest` (one of notes') run by the probe: scene-probe as its executable, the probe's
    /// actions declared beside notes' own (Sources/scene-probe/actions.json).
    static func probeManifest(_ manifest: String) throws -> Data {
        let overlay = try probeOverlay.get()
        guard var app = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifest))) as? [String: Any] else {
            throw HarnessError("\(manifest) is not a JSON object")
        }
        app["executable"] = overlay["executable"]
        // The probe is a debug build, which cannot be a zygote (ZygoteTests covers that).
        app["zygote"] = nil
        app["actions"] = (app["actions"] as? [Any] ?? []) + (overlay["actions"] as? [Any] ?? [])
        return try JSONSerialization.data(withJSONObject: app, options: [.prettyPrinted, .sortedKeys])
    }

    /// Sources/scene-probe/actions.json, read once for every harness of the run.
    nonisolated(unsafe) private static let probeOverlay = Swift.Result { () throws -> [String: Any] in
        let path = repository.appendingPathComponent("Sources/scene-probe/actions.json")
        guard let overlay = try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any] else {
            throw HarnessError("\(path.path) is not a JSON object")
        }
        return overlay
    }

    /// A copy of the notes manifest (run by the probe) with other fields.
    func installNotes(as id: String, _ fields: [String: Any]) throws {
        var manifest: [String: Any] = [
            "name": id, "executable": "scene-probe", "supportsMultipleScenes": true, "activityTypes": ["notes.edit"],
        ]
        manifest.merge(fields) { _, new in new }
        try install(app: id, manifest: manifest)
    }

    // MARK: - Processes

    /// Direct children of the broker that are zombies (exited, not reaped).
    func zombieChildren() -> [Int32] {
        children().filter { $0.state == "Z" }.map(\.pid)
    }

    /// The broker's direct children and their states, from /proc.
    func children() -> [(pid: Int32, state: Character)] {
        processTable().filter { $0.parent == brokerPID }.map { ($0.pid, $0.state) }
    }

    /// The broker's open descriptors, by target.
    func brokerDescriptors() -> [String] {
        let dir = "/proc/\(brokerPID)/fd"
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + $0) }.sorted()
    }

    // MARK: - Stopping

    /// Sends a signal to the broker and waits for it to exit; returns its exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        guard let broker, broker.isRunning else { return broker?.terminationStatus ?? 0 }
        kill(broker.processIdentifier, signal)
        broker.waitUntilExit()
        self.broker = nil
        return broker.terminationStatus
    }

    func remember(pid: Int32) { seenWorkerPIDs.insert(pid) }

    /// Kills the broker and every process it started, then removes the temp directory.
    func tearDown() {
        // Collected before the broker dies: its workers are then reparented and no longer
        // found below it.
        let started = seenWorkerPIDs.union(descendants(of: brokerPID))
        stop(signal: SIGKILL)
        for pid in started where pid > 0 && processExists(pid) {
            kill(pid, SIGKILL)
        }
        // A worker killed a moment ago may still be writing into the directory; removing it
        // under that write fails with "not empty" and leaves it behind (seen once).
        let deadline = Date().addingTimeInterval(5)
        while started.contains(where: { $0 > 0 && processExists($0) }), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        notify.stop()
        var lastError: Error?
        for _ in 0..<5 {
            do {
                try FileManager.default.removeItem(atPath: root)
                return
            } catch {
                lastError = error
                if !FileManager.default.fileExists(atPath: root) { return }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        print("BrokerHarness: could not remove \(root): \(lastError.map { "\($0)" } ?? "")")
    }

    /// Every process below `root` in the process tree, from /proc.
    private func descendants(of root: Int32) -> Set<Int32> {
        guard root > 0 else { return [] }
        let children = Dictionary(grouping: processTable(), by: \.parent).mapValues { $0.map(\.pid) }
        var found: Set<Int32> = []
        var queue = [root]
        while let next = queue.popLast() {
            for child in children[next] ?? [] where found.insert(child).inserted { queue.append(child) }
        }
        return found
    }
}

struct NoteState {
    var text: String
    var cursor: Int
    var callbacks: [String]
    var discarded: [String]
    var continued: [String]
    var pid: Int32
    /// The key scene (didBecomeKey / didResignKey, in the order they came).
    var isKey: Bool
    var keyChanges: [String]
    /// The window sizes the scene was told (sizeDidChange).
    var sizes: [String]
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// True while a process with this pid exists and is not a zombie.
func processExists(_ pid: Int32) -> Bool {
    guard let state = processStat(pid)?.state else { return false }
    return state != "Z" && state != "X"
}

/// Every process, with its parent and state, from /proc.
func processTable() -> [(pid: Int32, parent: Int32, state: Character)] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return names.compactMap { name in
        guard let pid = Int32(name), let stat = processStat(pid) else { return nil }
        return (pid, stat.parent, stat.state)
    }
}

/// A process's state (Z: zombie) and parent, from /proc/PID/stat (fields 3 and 4, after the
/// parenthesised name, which may itself hold spaces).
func processStat(_ pid: Int32) -> (state: Character, parent: Int32)? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
    guard fields.count > 1, let state = fields[0].first, let parent = Int32(fields[1]) else { return nil }
    return (state, parent)
}

/// What a process has mapped (`/proc/PID/maps`), read with `cat`: Foundation reads a file of
/// size 0, as every `/proc` file is, only in part.
func mappedFiles(of pid: Int) throws -> String {
    try runToCompletion("/bin/cat", ["/proc/\(pid)/maps"]).output
}

/// A test case that owns one broker for its duration.
class BrokerTestCase: XCTestCase {
    var harness: BrokerHarness!

    /// Extra windowbrokerd flags for this test case.
    var brokerArguments: [String] { [] }

    override func setUpWithError() throws {
        harness = try BrokerHarness(arguments: brokerArguments)
        try harness.start()
    }

    private var failed = false

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        failed = true
        super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
    }

    override func tearDown() {
        if let harness, failed {
            print("---- broker log ----\n\(harness.brokerLog.suffix(6000))\n--------------------")
        }
        harness?.tearDown()
        harness = nil
    }
}
