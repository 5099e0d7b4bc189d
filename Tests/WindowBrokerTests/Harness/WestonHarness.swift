import Foundation
import XCTest

/// A weston for window tests, nested in a headless sway of the test's own (weston's Wayland
/// backend: its output is a window on sway). weston's headless backend has no seat, so nothing
/// could click in it; nested, sway's virtual pointer moves weston's, and sway's screenshots
/// show weston's output. Scenes see weston alone: its shell, no layer shell, no xdg-activation,
/// no xdg-foreign, no server-side decorations.
final class WestonHarness {
    let sway: SwayHarness
    private var process = WaitableProcess()
    private let config: String
    /// The compositor's socket, as an absolute WAYLAND_DISPLAY.
    var waylandDisplay: String { sway.runtimeDirectory + "/weston-1" }
    /// weston's desktop background, so that what is not a window can be told apart.
    static let background = "ff00ff"
    /// Where weston's output starts on sway's (weston frames its window), found on screen.
    private(set) var origin = (x: 0, y: 0)
    /// weston's output: smaller than sway's, so that weston's frame around it fits on screen too.
    let size = (width: 1200, height: 660)

    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/weston")
            && FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/libweston-10/wayland-backend.so")
    }

    init(in sway: SwayHarness) throws {
        guard Self.available else { throw XCTSkip("weston is not installed (make test installs it)") }
        self.sway = sway
        config = sway.root + "/weston.ini"
        // No panel, no animations, no screen lock: what is on screen is the scenes' windows.
        try """
            [core]
            idle-time=0
            [shell]
            background-color=0xff\(Self.background)
            panel-position=none
            locking=false
            animation=none
            startup-animation=none
            """.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o644)
        try launch()
    }

    private func launch() throws {
        process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i", "HOME=\(sway.root)/home",
                             "XDG_RUNTIME_DIR=\(sway.runtimeDirectory)", "WAYLAND_DISPLAY=wayland-1", "/usr/bin/weston",
                             "--backend=wayland-backend.so", "--use-pixman", "--width=\(size.width)", "--height=\(size.height)",
                             "--socket=weston-1", "--config=\(config)"]
        let log = sway.root + "/weston.log"
        try process.run(output: log)
        var found: (Int, Int)?
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning {
            if FileManager.default.fileExists(atPath: waylandDisplay),
               let bounds = try? Self.bounds(of: Self.background, in: sway.screenshot(), root: sway.root, within: nil) {
                found = (bounds.x, bounds.y)
                break
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        guard let found else {
            stop()
            throw HarnessError("weston did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        origin = found
    }

    func stop() { process.terminateAndWait(grace: 5) }

    /// Ends this weston as a crash would (SIGKILL) and leaves nothing on its socket.
    func goAway() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        for name in ["weston-1", "weston-1.lock"] { try? FileManager.default.removeItem(atPath: sway.runtimeDirectory + "/" + name) }
    }

    /// A new weston on the same socket, after `goAway`.
    func comeBack() throws {
        try launch()
    }

    /// The box (in sway's output) of the pixels of one colour on weston's output; nil if none.
    func bounds(of colour: String, in screenshot: Data) throws -> (x: Int, y: Int, width: Int, height: Int)? {
        try Self.bounds(of: colour, in: screenshot, root: sway.root, within: (origin.x, origin.y, size.width, size.height))
    }

    /// The box of the pixels of one colour in a screenshot (within a crop); nil if none.
    private static func bounds(of colour: String, in screenshot: Data, root: String,
                               within crop: (Int, Int, Int, Int)?) throws -> (x: Int, y: Int, width: Int, height: Int)? {
        let path = root + "/bounds-\(UUID().uuidString.prefix(6)).png"
        try screenshot.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let box = crop.map { [$0.0, $0.1, $0.2, $0.3].map(String.init) } ?? []
        let said = try WindowTestCase.pngPixels([path, "--bounds", colour] + box)
        let numbers = said.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        return numbers.count == 4 ? (numbers[0], numbers[1], numbers[2], numbers[3]) : nil
    }
}
