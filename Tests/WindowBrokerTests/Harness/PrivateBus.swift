import Foundation
import XCTest

/// A dbus-daemon of the test's own (never the system's or the user's), killed by its pid at
/// the end. Its policy lets any user connect, as a bus whose socket others can reach does:
/// what keeps another user out is the broker's own check.
final class PrivateBus {
    let root: String
    let address: String
    private let process: Process

    static var available: Bool {
        ["dbus-daemon", "dbus-send", "busctl"].allSatisfy { FileManager.default.isExecutableFile(atPath: "/usr/bin/" + $0) }
    }

    init() throws {
        guard Self.available else { throw XCTSkip("dbus-daemon, dbus-send and busctl are not installed (make test installs them)") }
        root = FileManager.default.temporaryDirectory.appendingPathComponent("wb-bus-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, 0o755)
        let socket = root + "/bus"
        address = "unix:path=" + socket
        let config = root + "/bus.conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(toFile: config, atomically: true, encoding: .utf8)
        process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(config)", "--nofork", "--nopidfile", "--nosyslog"]
        let log = root + "/dbus.log"
        try process.run(output: log)
        if process.waitUntil(timeout: 10, { FileManager.default.fileExists(atPath: socket) }) {
            chmod(socket, 0o777)
            return
        }
        stop()
        throw HarnessError("dbus-daemon did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    func stop() {
        process.terminateAndWait()
        try? FileManager.default.removeItem(atPath: root)
    }
}

extension Process {
    /// Starts the process with its stdout in a new file at `output` and its stderr in one at
    /// `errors` (the same file when nil). This process's copies of the files are closed once the
    /// child has its own: Process keeps them open otherwise, and the thousands a suite leaked
    /// made Foundation's `Process.run` crash reading /proc/self/fd (swift-corelibs-foundation
    /// #5472).
    func run(output: String, errors: String? = nil) throws {
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        defer { try? stdout.close() }
        standardOutput = stdout
        if let errors {
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
            defer { try? stderr.close() }
            standardError = stderr
            try run()
        } else {
            standardError = stdout
            try run()
        }
    }

    /// Polls `ready` until it holds (true), or the process exits or `timeout` passes (false).
    func waitUntil(timeout: TimeInterval, _ ready: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if ready() { return true }
            if !isRunning { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    /// SIGTERM, then waits for the exit (nothing when it already ended).
    func terminateAndWait() {
        if isRunning {
            kill(processIdentifier, SIGTERM)
            waitUntilExit()
        }
    }
}
