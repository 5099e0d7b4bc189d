import Foundation
import XCTest

/// A headless sway for window tests: started as an unprivileged user (sway refuses root) with
/// its own runtime directory, killed by its pid at the end. Root clients (the broker's scenes,
/// swaymsg) reach its sockets anyway.
final class SwayHarness {
    let root: String
    let runtimeDirectory: String
    private var process: Process
    /// The seat's keyboard, as a desktop has one from the start (see `holdKeyboard`).
    private var keyboard: Process?
    private let configPath: String
    private let home: String
    /// The compositor's socket, as an absolute WAYLAND_DISPLAY.
    var waylandDisplay: String { runtimeDirectory + "/wayland-1" }
    private(set) var ipcSocket = ""

    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/sway") && FileManager.default.isExecutableFile(atPath: "/usr/bin/swaymsg")
    }

    /// `configuration`: more lines for sway's config (window rules for a test).
    init(configuration: [String] = []) throws {
        guard Self.available else { throw XCTSkip("sway is not installed (make test installs it)") }
        root = FileManager.default.temporaryDirectory.appendingPathComponent("wb-sway-\(UUID().uuidString.prefix(8))").path
        runtimeDirectory = root + "/run"
        home = root + "/home"
        for dir in [root, runtimeDirectory, home] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chown(dir, 65534, 65534)
        }
        chmod(runtimeDirectory, 0o700)
        chmod(root, 0o755)
        configPath = root + "/config"
        let config = configPath
        try """
            output HEADLESS-1 resolution 1280x720
            focus_on_window_activation focus
            default_border none
            default_floating_border none
            """.appending(configuration.map { "\n" + $0 }.joined()).write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o644)
        process = WaitableProcess()
        try launch()
    }

    private func launch() throws {
        process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i", "HOME=\(home)",
                             "XDG_RUNTIME_DIR=\(runtimeDirectory)", "WLR_BACKENDS=headless", "WLR_LIBINPUT_NO_DEVICES=1",
                             "WLR_RENDERER=pixman", "/usr/bin/sway", "-c", configPath]
        let log = root + "/sway.log"
        try process.run(output: log)
        let runtimeDirectory = self.runtimeDirectory
        var ipc: String?
        if process.waitUntil(timeout: 15, {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: runtimeDirectory)) ?? []
            ipc = entries.contains("wayland-1") ? entries.first { $0.hasPrefix("sway-ipc.") } : nil
            return ipc != nil
        }), let ipc {
            ipcSocket = runtimeDirectory + "/" + ipc
            try holdKeyboard()
            return
        }
        stop()
        throw HarnessError("sway did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Ends this sway and starts another on the same socket (`waylandDisplay`): its clients'
    /// connections are gone, and new ones reach the new compositor.
    /// A headless seat has no keyboard: the first virtual one (a `wtype`) adds it, the windows
    /// bind it only then, and the key it sends meanwhile reaches none of them (the press of the
    /// first key is lost, its release arrives: WAYLAND_DEBUG shows it). A virtual keyboard held
    /// for the compositor's life keeps one on the seat, as a real desktop has, and typing needs
    /// no delay. (wtype without keys only sleeps, its keyboard created.)
    private func holdKeyboard() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/wtype") else { return }
        let holder = WaitableProcess()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/wtype")
        holder.arguments = ["-s", "86400000"]
        holder.environment = ["WAYLAND_DISPLAY": waylandDisplay, "PATH": "/usr/bin:/bin"]
        try holder.run(output: root + "/keyboard.log")
        keyboard = holder
        let seatHasKeyboard = holder.waitUntil(timeout: 10) {
            ((try? self.swaymsg("-t", "get_inputs", "-r")) ?? "").contains("\"keyboard\"")
        }
        guard seatHasKeyboard else { throw HarnessError("the seat got no keyboard from wtype") }
    }

    func restart() throws {
        goAway()
        try launch()
    }

    /// Ends this sway (its clients' connections break) and leaves no socket behind: until
    /// `comeBack`, nothing answers on `waylandDisplay`.
    func goAway() {
        keyboard?.terminateAndWait(grace: 5)
        process.terminateAndWait(grace: 5)
        // A socket or lock a killed sway left behind would move the new one to wayland-2, and
        // its IPC socket would be taken for the new one's.
        let left = (try? FileManager.default.contentsOfDirectory(atPath: runtimeDirectory)) ?? []
        for name in left where name.hasPrefix("wayland-1") || name.hasPrefix("sway-ipc.") {
            try? FileManager.default.removeItem(atPath: runtimeDirectory + "/" + name)
        }
    }

    /// A new sway on the same socket, after `goAway`.
    func comeBack() throws {
        try launch()
    }

    func stop() {
        // A sway sent SIGTERM right after it came up (a test that skipped at once) was seen
        // running on, idle, with nothing pending, and the suite waited for it until it was
        // killed by hand: SIGKILL when SIGTERM has not ended it.
        keyboard?.terminateAndWait(grace: 5)
        process.terminateAndWait(grace: 5)
        try? FileManager.default.removeItem(atPath: root)
    }

    /// `swaymsg ARGS` against this sway; its output.
    @discardableResult
    func swaymsg(_ arguments: String...) throws -> String {
        try runToCompletion("/usr/bin/swaymsg", ["-s", ipcSocket] + arguments).output
    }

    struct Window {
        var appID: String
        var title: String
        var pid: Int32
        var visible: Bool
        var focused: Bool
        /// Where the compositor put it on the output, and its size.
        var x: Int
        var y: Int
        var width: Int
        var height: Int
        /// Floating over the tiles (sway floats a window that has a parent: a dialog, a sheet).
        var floating = false
    }

    /// Every toplevel in the tree (tiled and floating).
    func windows() throws -> [Window] {
        let data = Data(try swaymsg("-t", "get_tree", "-r").utf8)
        guard let tree = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [] }
        var found: [Window] = []
        func walk(_ node: [String: Any]) {
            if let appID = node["app_id"] as? String {
                let rect = node["rect"] as? [String: Any]
                found.append(Window(
                    appID: appID, title: node["name"] as? String ?? "", pid: Int32(node["pid"] as? Int ?? 0),
                    visible: node["visible"] as? Bool ?? false, focused: node["focused"] as? Bool ?? false,
                    x: rect?["x"] as? Int ?? 0, y: rect?["y"] as? Int ?? 0, width: rect?["width"] as? Int ?? 0, height: rect?["height"] as? Int ?? 0,
                    floating: node["type"] as? String == "floating_con"))
            }
            for key in ["nodes", "floating_nodes"] {
                for child in node[key] as? [[String: Any]] ?? [] { walk(child) }
            }
        }
        walk(tree)
        return found
    }

    /// Types on a virtual keyboard (wtype) into the focused window: `wtype ARGS`, e.g.
    /// `["hello"]`, `["-k", "BackSpace"]`, `["-M", "ctrl", "u", "-m", "ctrl"]`. No delay
    /// first: the seat has a keyboard all along (`holdKeyboard`).
    func wtype(_ arguments: String...) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/wtype") else { throw XCTSkip("wtype is not installed") }
        let run = try runToCompletion("/usr/bin/wtype", arguments, environment: ["WAYLAND_DISPLAY": waylandDisplay, "PATH": "/usr/bin:/bin"])
        guard run.code == 0 else { throw HarnessError("wtype \(arguments) failed (\(run.code)): \(run.output)") }
    }

    /// Moves, clicks or drags with a virtual pointer (`wb-pointer`, built with the package), in
    /// output coordinates: e.g. `["drag", "40", "64", "900", "300"]`.
    func pointer(_ arguments: String...) throws {
        let run = try runToCompletion(BrokerHarness.binDirectory + "/wb-pointer", arguments,
                                      environment: ["WAYLAND_DISPLAY": waylandDisplay, "PATH": "/usr/bin:/bin"])
        guard run.code == 0 else { throw HarnessError("wb-pointer \(arguments) failed (\(run.code)): \(run.output)") }
    }

    /// A screenshot of the whole output (grim), as PNG bytes.
    func screenshot() throws -> Data {
        let file = root + "/shot-\(UUID().uuidString.prefix(8)).png"
        _ = try runToCompletion("/usr/bin/grim", [file], environment: ["WAYLAND_DISPLAY": waylandDisplay, "PATH": "/usr/bin:/bin"])
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try Data(contentsOf: URL(fileURLWithPath: file))
    }

    /// A screenshot once the screen has settled: two taken one after the other agree, and
    /// `ready` holds when the second is taken. The compositor says nothing when a client's
    /// last frame is on screen, so agreement is the sign.
    func settledScreenshot(_ harness: BrokerHarness, _ what: String, ready: () throws -> Bool = { true }) throws -> Data {
        var last: Data?
        var settled = Data()
        try harness.eventually(what) {
            let shot = try screenshot()
            defer { last = shot }
            guard shot == last, try ready() else { return false }
            settled = shot
            return true
        }
        return settled
    }
}
