import Foundation
import IPCWire
import XCTest

/// The protocol from a second language: `Examples/python` talks to a real broker with message
/// classes `protoc --python_out` generated from the repository's .proto. The control client's
/// JSON matches wmctl's schemas and values; the Python scene app is launched from its shipped
/// manifest and restores after reclaim and after a broker SIGKILL.
final class PythonExampleTests: BrokerTestCase {
    private static let examples = BrokerHarness.repository.appendingPathComponent("Examples/python").path

    override var brokerArguments: [String] { ["--apps-dir", Self.examples + "/apps"] }

    override func setUpWithError() throws {
        // Debian's python3-protobuf serves /usr/bin/python3 (make deps installs it).
        let probe = try runToCompletion("/usr/bin/python3", ["-c", "import google.protobuf"])
        guard probe.code == 0 else { throw HarnessError("/usr/bin/python3 has no python3-protobuf; run `make deps` (\(probe.output))") }
        try super.setUpWithError()
    }

    private func client(_ arguments: String..., expectExit: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> Any {
        let result = harness.run("/usr/bin/python3", [Self.examples + "/wbclient.py", "--socket", harness.socketPath] + arguments)
        XCTAssertEqual(result.code, expectExit, "wbclient.py \(arguments.joined(separator: " ")): \(result.stdout) \(result.stderr)", file: file, line: line)
        return try result.json()
    }

    private func conforms(_ value: Any, to schema: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try JSONDecoder().decode(PlistValue.self, from: JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]))
        let rules = try JSONDecoder().decode(PlistValue.self, from: Data(contentsOf: URL(fileURLWithPath: JSONSchemaTests.schemaDirectory + "/\(schema).schema.json")))
        XCTAssertEqual(JSONSchemaTests.validate(output, against: rules, at: "$"), [], "wbclient.py output against \(schema).schema.json", file: file, line: line)
    }

    private func tallyState(_ session: String) throws -> [String: Any] {
        try XCTUnwrap(try harness.json("send", session, "state")["value"] as? [String: Any])
    }

    func testTheControlClientPrintsWhatWmctlPrints() throws {
        let status = try XCTUnwrap(try client("status") as? [String: Any])
        try conforms(status, to: "status")
        XCTAssertEqual(status["pid"] as? Int, Int(harness.broker?.processIdentifier ?? -1))

        let apps = try XCTUnwrap(try client("apps") as? [[String: Any]])
        try conforms(apps, to: "apps")
        XCTAssertEqual(Set(apps.compactMap { $0["id"] as? String }), Set(try harness.jsonList("apps").compactMap { $0["id"] as? String }))

        let opened = try XCTUnwrap(try client("open", "notes", "--title", "From Python", "--info", "noteID=py") as? [String: Any])
        try conforms(opened, to: "session-state")
        XCTAssertEqual(opened["created"] as? Bool, true)
        XCTAssertEqual(opened["state"] as? String, "foregroundActive")
        let session = try XCTUnwrap(opened["session"] as? String)

        // The same session through both clients: the same object, field for field.
        let fromPython = try XCTUnwrap(try client("sessions") as? [[String: Any]])
        try conforms(fromPython, to: "sessions")
        let fromWmctl = try harness.jsonList("sessions")
        XCTAssertEqual(fromPython.count, fromWmctl.count)
        let pythonRow = try XCTUnwrap(fromPython.first { $0["id"] as? String == session })
        let wmctlRow = try XCTUnwrap(fromWmctl.first { $0["id"] as? String == session })
        for key in ["id", "app", "title", "configuration", "state", "pid", "createdAt", "hasRestoration", "launchCount", "presentation"] {
            XCTAssertEqual("\(pythonRow[key] ?? "nil")", "\(wmctlRow[key] ?? "nil")", key)
        }
        XCTAssertEqual(Set(pythonRow.keys), Set(wmctlRow.keys))

        try conforms(try client("background", String(session.prefix(6))), to: "session-state")
        let shown = try XCTUnwrap(try client("show", session) as? [String: Any])
        try conforms(shown, to: "show")
        let restoration = try XCTUnwrap(shown["restorationActivity"] as? [String: Any])
        XCTAssertEqual((restoration["userInfo"] as? [String: Any])?["noteID"] as? String, "py")
        XCTAssertEqual(Set(shown.keys), Set(try harness.json("show", session).keys))
        try conforms(try client("reclaim", session), to: "session-state")
        XCTAssertEqual(try harness.state(session), "unattached")
        try conforms(try client("activate", session), to: "session-state")
        XCTAssertEqual(try harness.state(session), "foregroundActive")

        // Errors: the broker's code and message, exit 1; no broker at all, exit 3.
        let unknown = try XCTUnwrap((try client("show", "nope", expectExit: 1) as? [String: Any])?["error"] as? [String: Any])
        try conforms(["error": unknown], to: "error")
        XCTAssertEqual(unknown["code"] as? String, "unknownSession")
        let refusal = harness.run("/usr/bin/python3", [Self.examples + "/wbclient.py", "--socket", harness.root + "/nothing.sock", "status"])
        XCTAssertEqual(refusal.code, 3)
        XCTAssertTrue(refusal.stdout.contains("\"brokerUnreachable\""), refusal.stdout)

        try conforms(try client("close", session), to: "session-state")
        XCTAssertFalse(try harness.jsonList("sessions").contains { $0["id"] as? String == session })
    }

    func testThePythonSceneAppRestoresAndHearsItsOtherWindows() throws {
        // Events as they happen, one JSON object per line, filtered by the broker.
        let watch = try harness.subscribed(harness.start("/usr/bin/python3", [Self.examples + "/wbclient.py", "--socket", harness.socketPath,
                                                                               "watch", "--app", "tally", "--event", "didBecomeActive", "--count", "1"]))
        let opened = try XCTUnwrap(try client("open", "tally") as? [String: Any])
        let first = try XCTUnwrap(opened["session"] as? String)
        XCTAssertEqual(opened["launch"] as? String, "spawned")
        let firstPID = try XCTUnwrap(try harness.session(first)["pid"] as? Int)
        harness.remember(pid: Int32(firstPID))
        XCTAssertEqual(try harness.json("send", first, "increment", "--arg", "by=5")["value"] as? Int, 5)
        XCTAssertEqual(try harness.json("send", first, "set-label", "--arg", "label=Apples")["value"] as? String, "Apples: 5")
        XCTAssertEqual(try harness.session(first)["title"] as? String, "Apples: 5", "the switcher shows what the scene published")
        let watched = watch.wait()
        XCTAssertEqual(watched.code, 0, watched.stderr)
        XCTAssertEqual(watch.jsonLines.map { $0["event"] as? String }, ["didBecomeActive"])
        XCTAssertEqual(watch.jsonLines.first?["session"] as? String, first)

        // A second window, its own process; each hears the other's tally in the app's order.
        let second = try XCTUnwrap((try client("open", "tally", "--new") as? [String: Any])?["session"] as? String)
        XCTAssertNotEqual(try harness.session(second)["pid"] as? Int, firstPID)
        XCTAssertEqual(try harness.json("send", second, "increment")["value"] as? Int, 1)
        try harness.eventually("the first window heard the second's tally") {
            let heard = try tallyState(first)["heard"] as? [[Any]] ?? []
            return heard.contains { $0.count == 3 && $0[1] as? String == "tallied" && $0[2] as? Int == 1 }
        }
        let refused = try harness.json("send", first, "fly")
        XCTAssertEqual(refused["result"] as? String, "declined")

        // Reclaimed: the process goes; activated: a new one, restored from the saved activity.
        _ = try harness.json("background", first)
        _ = try harness.json("reclaim", first)
        try harness.eventually("the first scene process exited") { !processExists(Int32(firstPID)) }
        _ = try harness.json("activate", first)
        var state = try tallyState(first)
        XCTAssertEqual(state["count"] as? Int, 5)
        XCTAssertEqual(state["label"] as? String, "Apples")
        XCTAssertEqual(state["restoredFrom"] as? Int, 5)
        XCTAssertEqual(state["callbacks"] as? [String], ["willConnect", "restoreInteractionState", "willEnterForeground", "didBecomeActive"])

        // The broker killed outright: the scenes notice and exit; the restarted broker restores.
        XCTAssertEqual(try harness.json("send", first, "increment")["value"] as? Int, 6)
        _ = try harness.json("background", first)
        let pids = try [first, second].compactMap { try harness.session($0)["pid"] as? Int }
        pids.forEach { harness.remember(pid: Int32($0)) }
        harness.stop(signal: SIGKILL)
        try harness.eventually("the Python scene processes exited with their broker") { pids.allSatisfy { !processExists(Int32($0)) } }
        try harness.start()
        _ = try harness.json("activate", first)
        state = try tallyState(first)
        XCTAssertEqual(state["count"] as? Int, 6)
        XCTAssertEqual(state["restoredFrom"] as? Int, 6)
        let logs = harness.wmctl("logs", first)
        XCTAssertTrue(logs.stdout.contains("tally: scene process"), "the scene's stderr is captured: \(logs.stdout)")
    }

    /// A menu change is answered with the app's whole menu, or, when the sender says it does not
    /// read it (`omit_menu`, as the SDK does), with the app's id alone; applied either way.
    func testAMenuChangeIsAnsweredWithTheMenuUnlessItIsLeftOut() throws {
        let session = try XCTUnwrap((try client("open", "tally") as? [String: Any])?["session"] as? String)
        func addCommand(_ arguments: String...) throws -> [String: Any] {
            try XCTUnwrap(try harness.json(["send", session, "add-command"] + arguments.flatMap { ["--arg", $0] })["value"] as? [String: Any])
        }
        let whole = try addCommand("id=tally.reset", "title=Reset")
        let menus = try XCTUnwrap(try harness.json("menu", "--app", "tally")["menus"] as? [[String: Any]])
        XCTAssertEqual(whole["app"] as? String, "tally")
        XCTAssertEqual(whole["menus"] as? Int, menus.count, "the app's top-level menus, as `wmctl menu` lists them")
        XCTAssertGreaterThan(menus.count, 0)
        let omitted = try addCommand("id=tally.double", "title=Double", "omit=true")
        XCTAssertEqual(omitted["app"] as? String, "tally")
        XCTAssertEqual(omitted["menus"] as? Int, 0)
        let view = try XCTUnwrap((try harness.json("menu", "--app", "tally")["menus"] as? [[String: Any]])?.first { $0["id"] as? String == "view" })
        let ids = (view["children"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        XCTAssertTrue(ids.contains("tally.reset") && ids.contains("tally.double"), "both changes applied: \(ids)")
    }
}
