import Foundation
import Logging
import XCTest

@testable import WindowBroker

/// The broker as systemd sees it: notifications on a test-owned NOTIFY_SOCKET, socket
/// activation through systemd-socket-activate, graceful SIGTERM, and the unit files.
final class NotifyTests: XCTestCase {
    func testReadyOnlyOnceTheSocketAcceptsThenStatusWatchdogAndStopping() throws {
        let harness = try BrokerHarness()
        defer { harness.tearDown() }
        harness.brokerEnvironment["WATCHDOG_USEC"] = "300000"
        try harness.start()

        // READY=1 has arrived (start() waited for it): the socket must accept right now.
        let raw = try RawSocket(path: harness.socketPath)
        try raw.greet()
        let ready = try harness.notify.waitFor("READY=1")
        XCTAssertTrue(ready.assignments.contains("STATUS=Ready: 0 sessions, 0 workers, pressure normal"), ready.text)

        let session = try harness.openNote("notified")
        try harness.notify.waitFor("STATUS=Ready: 1 session, 1 worker, pressure normal")

        // WATCHDOG=1 every 150 ms (half of WATCHDOG_USEC): it keeps coming while the broker runs.
        let start = harness.notify.messages.count
        try harness.eventually("three more WATCHDOG=1") {
            harness.notify.messages.dropFirst(start).filter { $0.assignments.contains("WATCHDOG=1") }.count >= 3
        }

        let environment = try harness.json("send", session, "environment")
        XCTAssertEqual((environment["value"] as? [String: Any])?["serviceManagerVariables"] as? [String], [])
        XCTAssertEqual((environment["value"] as? [String: Any])?["WINDOWBROKER_FD"] as? String, "3")

        let brokerPID = harness.brokerPID
        XCTAssertEqual(harness.stop(signal: SIGTERM), 0)
        let stopping = try harness.notify.waitFor("STOPPING=1")
        XCTAssertEqual(stopping.senderPID, brokerPID)
        let senders = Set(harness.notify.messages.map(\.senderPID))
        XCTAssertEqual(senders, [brokerPID], "only the broker notifies; no worker ever does")
    }

    /// A SIGHUP sent the moment READY=1 arrives must reload, not find the default action
    /// (which ends the process): the broker traps it before it says it is ready.
    func testSIGHUPIsTrappedByTheTimeREADYArrives() throws {
        let harness = try BrokerHarness()
        defer { harness.tearDown() }
        try harness.start()  // returns as READY=1 arrives
        let status = try String(contentsOfFile: "/proc/\(harness.brokerPID)/status", encoding: .utf8)
        func mask(_ name: String) throws -> UInt64 {
            let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix(name + ":") }, status)
            return try XCTUnwrap(UInt64(line.split(separator: "\t").last.map(String.init) ?? "", radix: 16), String(line))
        }
        let sighup: UInt64 = 1 << (UInt64(SIGHUP) - 1)
        XCTAssertNotEqual((try mask("SigCgt") | mask("SigIgn")) & sighup, 0, "SIGHUP still has its default action (terminate) at READY=1:\n\(status)")
    }

    func testSIGHUPReloadsManifestsBetweenRELOADINGAndREADY() throws {
        let harness = try BrokerHarness()
        defer { harness.tearDown() }
        try harness.start()
        XCTAssertEqual(try harness.jsonList("apps").count, 2)
        var manifest = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: harness.appsDirectory + "/notes.json"))) as? [String: Any])
        manifest["id"] = "notes-extra"
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: harness.appsDirectory + "/extra.json"))

        let before = harness.notify.messages.count
        kill(harness.brokerPID, SIGHUP)
        try harness.notify.waitFor("RELOADING=1", after: before)
        try harness.notify.waitFor("READY=1", after: before)
        XCTAssertEqual(try harness.jsonList("apps").compactMap { $0["id"] as? String }, ["notes", "notes-extra", "notes-single"])
    }
}

final class GracefulShutdownTests: BrokerTestCase {
    func testSIGTERMWithThreeLiveScenesExitsZeroAndANewBrokerRestoresAllThree() throws {
        var texts: [String: String] = [:]
        for name in ["alpha", "beta", "gamma"] {
            let session = try harness.openNote(name)
            try harness.type(session, "text of \(name)")
            texts[session] = "text of \(name)"
        }
        XCTAssertEqual(harness.stop(signal: SIGTERM), 0)
        try harness.start()
        for (session, text) in texts {
            _ = try harness.json("activate", session)
            XCTAssertEqual(try harness.noteState(session).text, text)
        }
    }
}

final class SocketActivationTests: XCTestCase {
    func testServesThePassedSocketAndDoesNotBindItsOwnPath() throws {
        guard let activate = ["/usr/bin/systemd-socket-activate", "/bin/systemd-socket-activate"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("systemd-socket-activate is not installed (make test installs the systemd package)")
        }
        let harness = try BrokerHarness()
        defer { harness.tearDown() }
        let activatedPath = harness.root + "/activated.sock"
        var env = harness.environment
        env["WINDOWBROKER_SOCKET"] = nil
        // Not Foundation's Process: it watches its child through a descriptor that
        // systemd-socket-activate closes before exec, and then blocks in waitpid.
        let activator = try spawnProcess(activate, arguments: [
            "-l", activatedPath, "--fdname=control", "-E", "NOTIFY_SOCKET=\(harness.notify.path)",
            BrokerHarness.binDirectory + "/windowbrokerd", "--apps-dir", harness.appsDirectory,
            "--state-dir", harness.stateDirectory, "--runtime-dir", harness.runtimeDirectory,
        ], environment: env, output: harness.root + "/activate.log")
        harness.remember(pid: activator)
        defer {
            kill(activator, SIGKILL)
            var status: Int32 = 0
            waitpid(activator, &status, 0)
        }

        // The first connection starts the broker.
        var status: [String: Any] = [:]
        try harness.eventually("wmctl status over the activated socket") {
            let result = harness.wmctl(["--socket", activatedPath, "--json", "status"], socket: false)
            guard result.code == 0, let object = try result.json() as? [String: Any] else { return false }
            status = object
            return true
        }
        let brokerPID = Int32(status["pid"] as? Int ?? 0)
        XCTAssertEqual(brokerPID, activator, "systemd-socket-activate execs the broker in place")
        try harness.notify.waitFor("READY=1")
        XCTAssertFalse(FileManager.default.fileExists(atPath: harness.socketPath), "the broker did not bind its own path")

        let opened = harness.wmctl(["--socket", activatedPath, "--json", "open", "notes", "--activity", "notes.edit"], socket: false)
        XCTAssertEqual(opened.code, 0, opened.stdout + opened.stderr)

        kill(brokerPID, SIGTERM)
        var exitStatus: Int32 = -1
        try harness.eventually("the activated broker exits") { waitpid(activator, &exitStatus, WNOHANG) == activator }
        XCTAssertEqual(exitStatus, 0, "exit code 0 after SIGTERM")
    }
}

final class UnitFileTests: XCTestCase {
    func testUnitsPassSystemdAnalyzeVerify() throws {
        guard let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("systemd-analyze is not installed (make test installs the systemd package)")
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("wb-units-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        // The units as `make install` writes them for a PREFIX, with the binaries there.
        let prefix = root + "/prefix"
        let bin = prefix + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for name in ["windowbrokerd", "wmctl"] {
            try FileManager.default.createSymbolicLink(atPath: bin + "/" + name, withDestinationPath: BrokerHarness.binDirectory + "/" + name)
        }
        let repository = URL(fileURLWithPath: BrokerHarness.repositoryAppsDirectory).deletingLastPathComponent().path
        let units = root + "/units"
        let generated = try runToCompletion("/bin/bash", [repository + "/scripts/install.sh", "units"],
                                            environment: ["PREFIX": prefix, "UNIT_DIR": units, "HOME": root, "PATH": "/usr/bin:/bin"])
        XCTAssertEqual(generated.code, 0, generated.output)
        let service = try String(contentsOfFile: units + "/windowbroker.service", encoding: .utf8)
        XCTAssertTrue(service.contains("ExecStart=\(bin)/windowbrokerd --stop-timeout 45s"), "the real path, not %h/.local; the stop's deadline")
        XCTAssertTrue(service.contains("\nTimeoutStopSec=60\n"), "systemd waits longer than the broker's own stop: \(service)")
        XCTAssertTrue(service.contains("Also=windowbroker.socket"))
        // --man=no: the man pages are checked where make install writes them (scripts/check-install.sh).
        let (code, text) = try runToCompletion(analyze, ["--user", "verify", "--man=no", units + "/windowbroker.socket", units + "/windowbroker.service"],
                                               environment: ["HOME": root, "XDG_RUNTIME_DIR": root + "/run", "PATH": "/usr/bin:/bin"])
        XCTAssertEqual(code, 0, text)
        XCTAssertEqual(text.trimmingCharacters(in: .whitespacesAndNewlines), "", "no warnings")
    }
}

final class JournalFieldTests: XCTestCase {
    func testFieldsAreUpperCaseWithTheDocumentedNames() {
        let fields = JournalLogHandler.fields(
            level: .warning, message: "scene process ended\nunexpectedly",
            metadata: ["session": "abc", "app": "notes", "pid": "42", "event": "crashed", "reason": "crashed(SIGSEGV)",
                       "weird key-1": "x", "_trusted": "no", "9lives": "cat"],
            label: "windowbrokerd", identifier: "windowbrokerd", file: "Broker.swift", function: "workerExited", line: 7)
        XCTAssertEqual(Array(fields.prefix(7)), [
            "MESSAGE=scene process ended\nunexpectedly", "PRIORITY=4", "SYSLOG_IDENTIFIER=windowbrokerd",
            "LOGGER=windowbrokerd", "CODE_FILE=Broker.swift", "CODE_LINE=7", "CODE_FUNC=workerExited",
        ])
        let rest = Set(fields.dropFirst(7))
        XCTAssertEqual(rest, ["SESSION_ID=abc", "APP_ID=notes", "WORKER_PID=42", "EVENT=crashed", "REASON=crashed(SIGSEGV)",
                              "WEIRD_KEY_1=x", "TRUSTED=no", "LIVES=cat"])
        for field in fields {
            let name = field.prefix { $0 != "=" }
            XCTAssertTrue(name.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }, String(name))
            XCTAssertFalse(name.first == "_" || name.first?.isNumber == true, String(name))
        }
    }

    func testPrioritiesFollowSyslog() {
        XCTAssertEqual([Logger.Level.trace, .debug, .info, .notice, .warning, .error, .critical].map(JournalLogHandler.priority), [7, 7, 6, 5, 4, 3, 2])
    }

    func testMetadataCannotOverrideTheMessageFields() {
        let fields = JournalLogHandler.fields(level: .info, message: "m", metadata: ["message": "spoof", "priority": "0"],
                                              label: "l", identifier: "i", file: "f", function: "g", line: 1)
        XCTAssertEqual(fields.filter { $0.hasPrefix("MESSAGE=") }, ["MESSAGE=m"])
        XCTAssertEqual(fields.filter { $0.hasPrefix("PRIORITY=") }, ["PRIORITY=6"])
    }
}
