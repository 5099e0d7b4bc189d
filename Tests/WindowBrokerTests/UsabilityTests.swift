import Foundation
import XCTest

/// wmctl as people use it next to other command-line tools: in pipes, asking for its version.
final class UsabilityTests: BrokerTestCase {
    /// Runs wmctl with stdout on a pipe whose reader is gone; returns the exit status and stderr.
    private func wmctlIntoClosedPipe(_ arguments: [String]) throws -> (code: Int32, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BrokerHarness.binDirectory + "/wmctl")
        process.arguments = ["--socket", harness.socketPath] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try out.fileHandleForReading.close()
        try process.run()
        harness.remember(pid: process.processIdentifier)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stderr)
    }

    func testAClosedPipeEndsWmctlQuietly() throws {
        _ = try harness.openNote("piped")
        for arguments in [["--json", "sessions"], ["sessions"], ["status"], ["--json", "search", "piped"]] {
            let result = try wmctlIntoClosedPipe(arguments)
            XCTAssertEqual(result.code, 141, "wmctl \(arguments.joined(separator: " ")): \(result.stderr)")
            XCTAssertEqual(result.stderr, "", "no backtrace, no message")
        }
    }

    func testWatchIntoAReaderThatStopsEndsQuietly() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BrokerHarness.binDirectory + "/wmctl")
        process.arguments = ["--socket", harness.socketPath, "watch"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        harness.remember(pid: process.processIdentifier)
        // Like `wmctl watch | grep -m1 created`: read until the first event, then stop reading.
        try harness.eventually("the watch started") {
            String(decoding: err.fileHandleForReading.availableData, as: UTF8.self).contains("watching")
        }
        _ = try harness.openNote("first")
        _ = out.fileHandleForReading.availableData
        try out.fileHandleForReading.close()
        _ = try harness.openNote("second")
        try harness.eventually("wmctl watch ended after its reader went away") { !process.isRunning }
        XCTAssertEqual(process.terminationStatus, 141)
        XCTAssertFalse(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("Fatal"))
    }

    func testBothProgramsPrintTheirVersion() throws {
        let wmctl = harness.wmctl(["--version"], socket: false)
        XCTAssertEqual(wmctl.code, 0)
        XCTAssertTrue(wmctl.stdout.hasPrefix("0.") && wmctl.stdout.contains("(protocol "), wmctl.stdout)
        let daemon = try harness.runDaemon(["--version"])
        XCTAssertEqual(daemon.code, 0)
        XCTAssertEqual(daemon.output, wmctl.stdout, "the same release and protocol")
    }
}
