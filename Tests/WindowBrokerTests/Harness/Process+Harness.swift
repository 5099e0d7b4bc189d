import Foundation
import Glibc

/// How the harness starts, waits for and stops the programs it runs (the broker, wmctl, sway,
/// dbus-daemon).
extension Process {
    /// Starts the process with its stdout in a new file at `output` and its stderr in one at
    /// `errors` (the same file when nil). This process's copies of the files are closed once the
    /// child has its own: Process keeps them open otherwise, and the thousands a suite leaked
    /// made Foundation's `Process.run` crash reading /proc/self/fd (swift-corelibs-foundation
    /// #5472).
    func run(output: String, errors: String? = nil) throws {
        func created(_ path: String) throws -> FileHandle {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            return try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        }
        let stdout = try created(output)
        defer { try? stdout.close() }
        let stderr = try errors.map(created)
        defer { try? stderr?.close() }
        standardOutput = stdout
        standardError = stderr ?? stdout
        try run()
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

    /// SIGTERM, then waits for the exit (nothing when it already ended). With `grace`, a
    /// process still running that many seconds after the SIGTERM is sent SIGKILL.
    func terminateAndWait(grace: TimeInterval? = nil) {
        guard isRunning else { return }
        kill(processIdentifier, SIGTERM)
        if let grace {
            _ = waitUntil(timeout: grace) { false }
            if isRunning { kill(processIdentifier, SIGKILL) }
        }
        waitUntilExit()
    }
}
