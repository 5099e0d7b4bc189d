import Foundation
import IPCWire
import XCTest

/// Bad input gets a clear, typed error and changes nothing.
final class ErrorTests: BrokerTestCase {
    private func snapshot() throws -> String {
        let sessions = try harness.jsonList("sessions").map { entry in
            "\(entry["id"] ?? "") \(entry["state"] ?? "") \(entry["hasRestoration"] ?? "") \(entry["title"] ?? "")"
        }
        return sessions.sorted().joined(separator: "\n")
    }

    func testRefusedRequestsChangeNothing() throws {
        let session = try harness.openNote("keep")
        try harness.type(session, "precious")
        let before = try snapshot()

        XCTAssertEqual(try harness.refusal("open", "no-such-app").code, "unknownApp")
        let undeclared = try harness.refusal("open", "notes", "--activity", "mail.compose")
        XCTAssertEqual(undeclared.code, "undeclaredActivityType")
        XCTAssertTrue(undeclared.message.contains("notes.edit"), undeclared.message)
        XCTAssertEqual(try harness.refusal("activate", UUID().uuidString).code, "unknownSession")
        XCTAssertEqual(try harness.refusal("show", "not-a-uuid").code, "unknownSession")
        XCTAssertEqual(try harness.refusal("reclaim", session).code, "invalidState", "a foreground scene is never reclaimed")
        XCTAssertEqual(try harness.refusal("send", UUID().uuidString, "state").code, "unknownSession")

        var deep = "\"leaf\""
        for _ in 0..<40 { deep = "[\(deep)]" }
        XCTAssertEqual(try harness.refusal("open", "notes", "--activity", "notes.edit", "--info-json", "{\"deep\": \(deep)}").code, "invalidUserInfo")
        let big = String(repeating: "x", count: 100 * 1024)  // three of these exceed the 256 KiB activity limit
        XCTAssertEqual(try harness.refusal("open", "notes", "--activity", "notes.edit", "--info", "a=\(big)", "--info", "b=\(big)", "--info", "c=\(big)").code, "payloadTooLarge")

        XCTAssertEqual(try snapshot(), before)
        XCTAssertEqual(try harness.noteState(session).text, "precious")
    }

    /// An app that fails at its start says why where the user is: its exit and its last words.
    func testAnAppThatFailsAtItsStartSaysWhyInTheError() throws {
        try harness.install(app: "broken", manifest: [
            "name": "Fails at start", "executable": "/bin/sh",
            "arguments": ["-c", "echo 'reading the settings'; echo 'cannot find my config' >&2; exit 3"],
            "activityTypes": ["notes.edit"],
        ])
        let refused = try harness.refusal("open", "broken", "--activity", "notes.edit")
        XCTAssertEqual(refused.code, "workerFailed")
        XCTAssertTrue(refused.message.contains("it exited with status 3"), refused.message)
        XCTAssertTrue(refused.message.contains("\"cannot find my config\""), refused.message)
        XCTAssertTrue(refused.message.contains("no session was kept"), refused.message)
        XCTAssertFalse(refused.message.contains("wmctl logs"), "a session that is not kept has no log to point to: \(refused.message)")
        // What it printed is kept for the app, though its session was not.
        let logs = harness.wmctl("logs", "--app", "broken")
        XCTAssertEqual(logs.code, 0, logs.stderr)
        XCTAssertTrue(logs.stdout.contains("reading the settings") && logs.stdout.contains("stderr]  cannot find my config"), logs.stdout)
        XCTAssertTrue(harness.wmctl("logs", "--app", "notes").stdout.contains("no process of notes failed to start"))
        XCTAssertEqual(harness.wmctl("logs").code, 2, "a session or an app")
        XCTAssertEqual(try harness.refusal("logs", "--app", "nosuch").code, "unknownApp")
        // The log gives the same reason: an exit, not a missed deadline.
        try harness.eventually("the log says how the process ended") { harness.brokerLog.contains("crashed(exit 3)") }
        XCTAssertFalse(harness.brokerLog.contains("reason=timedOut"), harness.brokerLog)
    }

    func testUsageErrorsExitTwoAndUnreachableBrokerExitsThree() throws {
        XCTAssertEqual(harness.wmctl("open").code, 2)
        XCTAssertEqual(harness.wmctl("defaults", "notes", "frobnicate", "key").code, 2)
        XCTAssertEqual(harness.wmctl("post", "notes", "event", "--payload-json", "[1, 2]").code, 2)
        XCTAssertEqual(harness.wmctl("open", "notes", "--activity", "notes.edit", "--info-json", "[1, 2]").code, 2)
        XCTAssertEqual(harness.wmctl("send", "x", "type", "--arg", "no-equals-sign").code, 2)
        let unreachable = harness.wmctl(["--socket", harness.root + "/nowhere.sock", "--json", "status"], socket: false)
        XCTAssertEqual(unreachable.code, 3)
        XCTAssertTrue(unreachable.stdout.contains("brokerUnreachable"), unreachable.stdout)
    }

    func testNonPlistUserInfoFromARawClientIsRefused() throws {
        let raw = try RawSocket(path: harness.socketPath)
        try raw.greet()
        var activity = UserActivity(activityType: "notes.edit").wire
        activity.userInfo.entries.append(.with { $0.key = "bad" })  // a value with no plist type
        try raw.write(frame: .with {
            $0.id = 2
            $0.controlRequest = .with { $0.open = .with { $0.appID = "notes"; $0.activity = activity } }
        })
        let reply = try XCTUnwrap(raw.readFrame())
        XCTAssertEqual(reply.replyTo, 2)
        guard case .error(let error) = reply.body else { return XCTFail("expected an error, got \(reply)") }
        XCTAssertEqual(error.code, .invalidUserInfo)
        XCTAssertTrue(error.message.contains("userInfo.bad"), error.message)
        XCTAssertEqual(try harness.jsonList("sessions").count, 0)
    }

    func testEveryRequestGetsExactlyOneReplyInOrder() throws {
        let raw = try RawSocket(path: harness.socketPath)
        try raw.greet()
        let requests: [Windowbroker_V1_ControlRequest] = [
            .with { $0.status = .init() },
            .with { $0.activate = .with { $0.sessionID = UUID().uuidString } },
            .with { $0.ping = .with { $0.payload = Data([1, 2, 3]) } },
            Windowbroker_V1_ControlRequest(),  // no request kind at all
            .with { $0.apps = .init() },
        ]
        for (i, request) in requests.enumerated() {
            try raw.write(frame: .with { $0.id = UInt64(10 + i); $0.controlRequest = request })
        }
        var kinds: [String] = []
        for i in requests.indices {
            let reply = try XCTUnwrap(raw.readFrame(), "reply \(i)")
            XCTAssertEqual(reply.replyTo, UInt64(10 + i))
            switch reply.body {
            case .controlReply: kinds.append("reply")
            case .error(let error): kinds.append("error:\(error.code)")
            default: kinds.append("other")
            }
        }
        XCTAssertEqual(kinds, ["reply", "error:unknownSession", "reply", "error:invalidRequest", "reply"])
    }
}

/// Malformed frames: the offending connection is answered if possible and closed; the broker
/// keeps serving everyone else.
final class MalformedFrameTests: BrokerTestCase {
    private func assertBrokerServes(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(harness.wmctl("status").code, 0, "the broker still serves", file: file, line: line)
    }

    func testTruncatedFrame() throws {
        let raw = try RawSocket(path: harness.socketPath, receiveTimeout: 2)
        raw.write(RawSocket.header(100) + [1, 2, 3])
        assertBrokerServes()
        // The broker is still waiting for the rest; closing our end must not disturb it.
    }

    func testOversizedFrameIsRefusedWithPayloadTooLarge() throws {
        let raw = try RawSocket(path: harness.socketPath)
        try raw.greet()
        let size = 2 * 1024 * 1024
        _ = raw.write(RawSocket.header(size) + [UInt8](repeating: 0x41, count: size))
        let answer = try XCTUnwrap(raw.readFrame())
        guard case .error(let error) = answer.body else { return XCTFail("expected an error, got \(answer)") }
        XCTAssertEqual(error.code, .payloadTooLarge)
        XCTAssertTrue(raw.isClosedByPeer())
        assertBrokerServes()
    }

    func testAHeaderAnnouncingTooMuchIsRefusedAtOnce() throws {
        let raw = try RawSocket(path: harness.socketPath, receiveTimeout: 3)
        try raw.greet()
        // Only the header: nothing else follows, and the Hello deadline is 10 s away.
        _ = raw.write(RawSocket.header(200 * 1024 * 1024))
        let answer = try XCTUnwrap(raw.readFrame(), "answered within 3 s")
        guard case .error(let error) = answer.body else { return XCTFail("expected an error, got \(answer)") }
        XCTAssertEqual(error.code, .payloadTooLarge)
        XCTAssertTrue(error.message.contains("announces"), error.message)
        XCTAssertTrue(raw.isClosedByPeer())
        assertBrokerServes()
    }

    func testRandomBytesGetMalformedFrameAndClose() throws {
        let raw = try RawSocket(path: harness.socketPath)
        var generator = SystemRandomNumberGenerator()
        let garbage = (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
        raw.write(RawSocket.header(garbage.count) + garbage.map { $0 | 0x80 })  // high bits: never a valid varint tag stream
        let answer = raw.readFrame()
        if let answer, case .error(let error) = answer.body {
            XCTAssertTrue([.malformedFrame, .handshakeRequired].contains(error.code), "\(error)")
        } else {
            XCTFail("expected an error frame, got \(String(describing: answer))")
        }
        XCTAssertTrue(raw.isClosedByPeer())
        assertBrokerServes()
    }

    func testWrongFirstMessageGetsHandshakeRequired() throws {
        let raw = try RawSocket(path: harness.socketPath)
        try raw.write(frame: .with { $0.id = 1; $0.controlRequest = .with { $0.status = .init() } })
        let answer = try XCTUnwrap(raw.readFrame())
        guard case .error(let error) = answer.body else { return XCTFail("expected an error, got \(answer)") }
        XCTAssertEqual(error.code, .handshakeRequired)
        XCTAssertTrue(raw.isClosedByPeer())
        assertBrokerServes()
    }

    func testUnknownVersionAndWorkerKindAreRefused() throws {
        let old = try RawSocket(path: harness.socketPath)
        try old.write(frame: RawSocket.hello(version: 99))
        guard case .error(let versionError)? = old.readFrame()?.body else { return XCTFail("expected an error") }
        XCTAssertEqual(versionError.code, .unsupportedVersion)
        XCTAssertTrue(old.isClosedByPeer())

        let posing = try RawSocket(path: harness.socketPath)
        try posing.write(frame: RawSocket.hello(kind: .worker))
        guard case .error(let kindError)? = posing.readFrame()?.body else { return XCTFail("expected an error") }
        XCTAssertEqual(kindError.code, .permissionDenied, "workers cannot connect through the control socket")
        assertBrokerServes()
    }

    func testControlSocketAndStateArePrivate() throws {
        let runtime = try FileManager.default.attributesOfItem(atPath: harness.runtimeDirectory)
        XCTAssertEqual((runtime[.posixPermissions] as? Int).map { $0 & 0o777 }, 0o700)
        let store = try FileManager.default.attributesOfItem(atPath: harness.stateDirectory + "/state.sqlite")
        XCTAssertEqual((store[.posixPermissions] as? Int).map { $0 & 0o777 }, 0o600)
    }
}

/// A bad manifest is skipped with a logged reason; the broker still starts and serves the rest.
final class BadManifestTests: XCTestCase {
    func testBrokerStartsAndSkipsABadManifest() throws {
        let harness = try BrokerHarness()
        defer { harness.tearDown() }
        _ = FileManager.default.createFile(atPath: harness.appsDirectory + "/broken.json", contents: Data(#"{"id": "broken", "executable": 42}"#.utf8))
        try harness.start()
        let apps = try harness.jsonList("apps").compactMap { $0["id"] as? String }
        XCTAssertEqual(apps, ["notes", "notes-single"])
        XCTAssertTrue(harness.brokerLog.contains("broken.json: field 'executable'"), harness.brokerLog)
    }
}

/// SO_PEERCRED: a control peer running as another user is refused even when it can reach the socket.
/// wmctl writes its first request right behind its Hello instead of waiting for the Welcome.
final class PipelinedHelloTests: BrokerTestCase {
    /// Played by the test: a broker that refuses the Hello and hangs up. The request was
    /// already on its way, and what wmctl reports must still be the refusal.
    func testARefusedHelloIsWhatWmctlReportsThoughItsRequestWasSentBehindIt() throws {
        let path = harness.root + "/refusing.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        XCTAssertEqual(withUnixAddress(path) { bind(listener, $0, $1) }, 0)
        XCTAssertEqual(listen(listener, 1), 0)
        let seen = Seen()
        let refusing = Thread {
            let peer = RawSocket(adopting: accept(listener, nil, nil), receiveTimeout: 5)
            guard let hello = peer.readFrame(), case .hello = hello.body else { return }
            seen.requestBeforeAnswer = peer.readFrame().map { if case .controlRequest = $0.body { true } else { false } } ?? false
            try? peer.write(frame: .with {
                $0.replyTo = hello.id
                $0.error = BrokerError(.unsupportedVersion, "this broker speaks protocol 99").wire
            })
            seen.done.signal()
        }
        refusing.start()
        let result = harness.run(BrokerHarness.binDirectory + "/wmctl", ["--socket", path, "status"])
        XCTAssertEqual(seen.done.wait(timeout: .now() + 10), .success, "the refusing side did not finish")
        XCTAssertTrue(seen.requestBeforeAnswer, "wmctl waited for the Welcome before sending its request")
        XCTAssertNotEqual(result.code, 0)
        XCTAssertTrue(result.stderr.contains("protocol 99"), result.stderr)
    }

    private final class Seen: @unchecked Sendable {
        var requestBeforeAnswer = false
        let done = DispatchSemaphore(value: 0)
    }
}

final class PeerCredentialTests: BrokerTestCase {
    func testAPeerOfAnotherUidIsRefused() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv to act as another user")
        }
        // Open the path up so only the credential check stands in the way.
        for dir in [harness.root, harness.root + "/run", harness.runtimeDirectory] { chmod(dir, 0o755) }
        chmod(harness.socketPath, 0o666)
        let process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups",
                             BrokerHarness.binDirectory + "/wmctl", "--socket", harness.socketPath, "--json", "status"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard !output.contains("Permission denied") else { throw XCTSkip("the test binaries are not readable by nobody") }
        XCTAssertEqual(process.terminationStatus, 1, output)
        XCTAssertTrue(output.contains("permissionDenied"), output)
        XCTAssertEqual(harness.wmctl("status").code, 0, "the owner is still served")
    }
}
