import Foundation
import XCTest

/// Scenes in sync across processes, through the notes app: `type` in one window posts
/// `noteChanged` and every window on the note follows; `toggle-toolbar` writes the shared
/// default every window observes; `scroll` keeps an offset in the scene's own storage.
final class SceneSyncTests: BrokerTestCase {
    // A small queue, so a hung scene overflows after a few updates; a long action deadline,
    // so the hung scene is not killed while the test works.
    override var brokerArguments: [String] { ["--update-queue-limit", "4", "--worker-timeout", "30s", "--max-foreground", "2"] }

    private func value(_ session: String, _ action: String, _ arguments: String...) throws -> [String: Any] {
        let reply = try harness.json(["send", session, action] + arguments.flatMap { ["--arg", $0] })
        guard reply["result"] as? String == "performed" else { throw HarnessError("\(action) was not performed: \(reply)") }
        return reply
    }

    private func state(_ session: String) throws -> [String: Any] {
        let reply = try harness.json("send", session, "state")
        guard let value = reply["value"] as? [String: Any] else { throw HarnessError("no state in \(reply)") }
        return value
    }

    /// `open notes --new --info noteID=...`: the app's default activity type is filled in.
    private func window(on note: String) throws -> String {
        let reply = try harness.json("open", "notes", "--new", "--info", "noteID=\(note)")
        return try XCTUnwrap(reply["session"] as? String)
    }

    func testTwoWindowsOnOneNoteStayInSync() throws {
        let first = try window(on: "x")
        let second = try window(on: "x")
        let elsewhere = try window(on: "y")
        _ = try value(first, "type", "text=hello")
        try harness.eventually("the second window shows the text") { try state(second)["text"] as? String == "hello" }
        _ = try value(second, "type", "text= world")
        try harness.eventually("the first window follows the second") { try state(first)["text"] as? String == " worldhello" || state(first)["text"] as? String == "hello world" }
        let firstText = try state(first)["text"] as? String
        XCTAssertEqual(firstText, try state(second)["text"] as? String, "both windows show the same text")
        // A window on another note receives the events too (they are the app's), and ignores them.
        XCTAssertEqual(try state(elsewhere)["text"] as? String, "")
        try harness.eventually("every window counted both events") {
            try [first, second, elsewhere].allSatisfy { try state($0)["updates"] as? Int == 2 }
        }
        let sequences = try [first, second, elsewhere].map { try XCTUnwrap(state($0)["lastSequence"] as? Int) }
        XCTAssertEqual(Set(sequences).count, 1, "one order for the whole app: \(sequences)")
    }

    func testFiveWindowsSeeEveryUpdateInOneOrder() throws {
        let windows = try (0..<5).map { _ in try window(on: "shared") }
        // Interleaved writers, events from outside and defaults changes: one order for all.
        for round in 0..<4 {
            _ = try value(windows[round % 5], "type", "text=\(round)")
            _ = try harness.json("post", "notes", "tick", "--payload-json", "{\"round\": \(round)}")
            _ = try harness.json("defaults", "notes", "set", "round", "\(round)")
        }
        let expectedCount = 12
        try harness.eventually("every window received all \(expectedCount) updates") {
            try windows.allSatisfy { (try state($0)["sequences"] as? [Int])?.count == expectedCount }
        }
        let orders = try windows.map { try XCTUnwrap(state($0)["sequences"] as? [Int]) }
        for order in orders {
            XCTAssertEqual(order, order.sorted(), "sequence numbers only grow")
            XCTAssertEqual(Set(order).count, order.count, "each at most once")
        }
        XCTAssertEqual(Set(orders.map { $0.map(String.init).joined(separator: ",") }).count, 1, "the same order in every window: \(orders)")
        let text = try state(windows[0])["text"] as? String
        for other in windows.dropFirst() { XCTAssertEqual(try state(other)["text"] as? String, text) }
    }

    func testPostWaitReportsDeliveryToEveryConnectedScene() throws {
        let windows = try (0..<3).map { _ in try window(on: "n") }
        let reply = try harness.json("post", "notes", "ping", "--wait")
        XCTAssertEqual(reply["receivers"] as? Int, 3)
        XCTAssertEqual(reply["delivered"] as? Int, 3)
        XCTAssertGreaterThan(reply["maxMicros"] as? Int ?? 0, 0)
        XCTAssertLessThanOrEqual(reply["p50Micros"] as? Int ?? .max, reply["maxMicros"] as? Int ?? 0)
        XCTAssertEqual(reply["unacknowledged"] as? [String], [])
        for window in windows { XCTAssertEqual(try state(window)["lastSequence"] as? Int, reply["sequence"] as? Int) }
        // A reclaimed scene is not connected: it is not a receiver.
        _ = try harness.json("reclaim", windows[0])
        let after = try harness.json("post", "notes", "ping", "--wait")
        XCTAssertEqual(after["receivers"] as? Int, 2)
        XCTAssertEqual(after["sequence"] as? Int, (reply["sequence"] as? Int ?? 0) + 1)
    }

    func testAHungSceneDelaysNobodyAndGetsOneDropNotice() throws {
        let writer = try window(on: "n")
        let reader = try window(on: "n")
        let hung = try window(on: "n")
        let release = harness.root + "/release-hang"
        let hang = try harness.start(wmctl: ["send", hung, "hang", "--arg", "until=\(release)"])
        defer {
            _ = FileManager.default.createFile(atPath: release, contents: nil)
            _ = hang.wait()
        }
        try harness.eventually("the scene holds its main thread") { harness.brokerLog.contains("hang: holding the main thread") }
        for i in 0..<10 { _ = try value(writer, "type", "text=\(i)") }
        try harness.eventually("the reader has every update while the hung scene is still stuck") {
            try state(reader)["updates"] as? Int == 10
        }
        XCTAssertTrue(hang.isRunning, "the hung scene was still hung when the others had everything")
        XCTAssertEqual(try state(reader)["text"] as? String, "0123456789")
        let status = try harness.json("status")
        XCTAssertEqual(status["updatesDropped"] as? Int, 1, "one notice for the hung scene, counted")

        _ = FileManager.default.createFile(atPath: release, contents: nil)
        XCTAssertEqual(hang.wait().code, 0)
        try harness.eventually("the hung scene resynchronised from the model") {
            try state(hung)["text"] as? String == "0123456789"
        }
        let hungState = try state(hung)
        let dropped = try XCTUnwrap(hungState["droppedUpdates"] as? [[Int]])
        XCTAssertEqual(dropped.count, 1, "exactly one notice: \(dropped)")
        let sequences = try XCTUnwrap(hungState["sequences"] as? [Int])
        XCTAssertEqual(sequences, sequences.sorted(), "still in order after the notice")
        XCTAssertEqual(sequences.last, 10)
        XCTAssertLessThan(hungState["updates"] as? Int ?? 99, 10, "some events were dropped, not replayed")
        XCTAssertEqual(try harness.json("status")["updatesDropped"] as? Int, 1)
    }

    func testDefaultsReachEveryWindowAndANewWindowStartsWithThem() throws {
        let first = try window(on: "a")
        let second = try window(on: "b")
        let watch = try harness.startWatch(["--event", "defaultsChanged"])
        defer { watch.stop() }
        let toggled = try value(first, "toggle-toolbar")
        XCTAssertEqual(toggled["value"] as? Bool, true)
        try harness.eventually("the other window follows") { try state(second)["toolbarHidden"] as? Bool == true }
        try harness.eventually("the writer sees its own change delivered") { try state(first)["toolbarChanges"] as? Int == 1 }
        XCTAssertEqual(try harness.json("defaults", "notes")["toolbarHidden"] as? Bool, true)
        let later = try window(on: "c")
        XCTAssertEqual(try state(later)["toolbarHiddenAtConnect"] as? Bool, true, "the value was in place before willConnect")
        try harness.eventually("watch shows the change") {
            watch.jsonLines.contains { $0["event"] as? String == "defaultsChanged" && ($0["detail"] as? String ?? "").hasPrefix("toolbarHidden set") }
        }
        // From outside too: wmctl writes, every window follows.
        _ = try harness.json("defaults", "notes", "set", "toolbarHidden", "false")
        try harness.eventually("every window shows the toolbar again") {
            try [first, second, later].allSatisfy { try state($0)["toolbarHidden"] as? Bool == false }
        }
    }

    func testDefaultsSurviveABrokerSIGKILL() throws {
        _ = try harness.json("defaults", "notes", "set", "toolbarHidden", "true")
        _ = try harness.json("defaults", "notes", "set", "theme", "{\"name\": \"dark\", \"size\": 12}")
        _ = try harness.json("defaults", "notes", "set", "gone", "1")
        _ = try harness.json("defaults", "notes", "delete", "gone")
        harness.stop(signal: SIGKILL)
        try harness.start()
        let defaults = try harness.json("defaults", "notes")
        XCTAssertEqual(defaults["toolbarHidden"] as? Bool, true)
        XCTAssertEqual((defaults["theme"] as? [String: Any])?["name"] as? String, "dark")
        XCTAssertNil(defaults["gone"])
        XCTAssertEqual(harness.wmctl("defaults", "notes", "get", "gone").code, 1)
        let note = try window(on: "z")
        XCTAssertEqual(try state(note)["toolbarHiddenAtConnect"] as? Bool, true)
    }

    func testSceneStorageSurvivesReclaimCrashAndRestartAndGoesWithTheSession() throws {
        let note = try window(on: "s")
        _ = try value(note, "scroll", "offset=240")
        _ = try harness.json("background", note)
        _ = try harness.json("reclaim", note)
        _ = try harness.json("activate", note)
        XCTAssertEqual(try state(note)["scrollOffset"] as? Int, 240, "back after reclaim")

        _ = try value(note, "scroll", "offset=480")
        let pid = try XCTUnwrap(try state(note)["pid"] as? Int)
        kill(Int32(pid), SIGKILL)
        try harness.eventually("the crash is recorded") { try harness.state(note) == "unattached" }
        _ = try harness.json("activate", note)
        XCTAssertEqual(try state(note)["scrollOffset"] as? Int, 480, "back after the worker's SIGKILL")

        let marker = "storage-marker-\(UUID().uuidString.prefix(8))"
        _ = try value(note, "store", "key=anchor", "value=\(marker)")
        _ = try harness.json("background", note)
        harness.stop(signal: SIGKILL)
        try harness.start()
        let shown = try harness.json("show", note)
        XCTAssertEqual((shown["storage"] as? [String: Any])?["scrollOffset"] as? Int, 480)
        _ = try harness.json("activate", note)
        XCTAssertEqual(try state(note)["scrollOffset"] as? Int, 480, "back after the broker's SIGKILL")
        XCTAssertTrue(try stateFilesContain(marker), "the check below can fail: the marker is on disk now")

        _ = try harness.json("close", note)
        XCTAssertFalse(try stateFilesContain(marker), "closing the session deleted its storage")
        // Another window on the same note starts with nothing of it.
        let fresh = try window(on: "s")
        XCTAssertEqual((try state(fresh)["storage"] as? [String: Any])?.count, 0)
    }

    private func stateFilesContain(_ text: String) throws -> Bool {
        let directory = harness.root + "/state"
        let needle = Data(text.utf8)
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            if let data = FileManager.default.contents(atPath: directory + "/" + name), data.range(of: needle) != nil { return true }
        }
        return false
    }

    func testLimitsGiveClearErrorsAndChangeNothing() throws {
        let note = try window(on: "l")
        // Larger than one command-line argument may be: read from files (`@PATH`).
        let big = String(repeating: "x", count: 300_000)
        let bigPayload = harness.root + "/big-payload.json"
        let bigValue = harness.root + "/big-value.json"
        try "{\"text\": \"\(big)\"}".write(toFile: bigPayload, atomically: true, encoding: .utf8)
        try "\"\(big)\"".write(toFile: bigValue, atomically: true, encoding: .utf8)
        let post = try harness.refusal("post", "notes", "big", "--payload-json", "@" + bigPayload)
        XCTAssertEqual(post.code, "payloadTooLarge")
        XCTAssertTrue(post.message.contains("limit"), post.message)
        XCTAssertEqual(try harness.refusal("post", "nope", "x").code, "unknownApp")
        XCTAssertEqual(try harness.refusal("post", "notes", String(repeating: "n", count: 300)).code, "invalidRequest")

        XCTAssertEqual(try harness.refusal("defaults", "notes", "set", "huge", "@" + bigValue).code, "payloadTooLarge")
        XCTAssertEqual(try harness.refusal("defaults", "notes", "set", String(repeating: "k", count: 300), "1").code, "invalidRequest")
        XCTAssertEqual(try harness.json("defaults", "notes").count, 0, "nothing was stored")
        XCTAssertEqual(harness.wmctl("defaults", "notes", "set", "k", "not json").code, 2, "a value that is not JSON is a usage error")

        // From a scene: the same limits, reported to the scene.
        let refused = try harness.json("send", note, "post", "--arg", "name=big", "--arg", "bytes=300000")
        XCTAssertEqual(refused["result"] as? String, "declined")
        XCTAssertTrue((refused["reason"] as? String ?? "").hasPrefix("payloadTooLarge"), "\(refused)")
        _ = try value(note, "store", "key=big", "value=\(String(repeating: "s", count: 70_000))")
        try harness.eventually("the oversized storage write was refused") {
            (try state(note)["refusedUpdates"] as? [String] ?? []).contains("payloadTooLarge")
        }
        XCTAssertEqual((try harness.json("show", note)["storage"] as? [String: Any])?.count ?? 0, 0)
    }
}
