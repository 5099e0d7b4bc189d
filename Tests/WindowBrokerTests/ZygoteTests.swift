import Foundation
import XCTest

/// Apps whose manifests ask for a zygote (`"zygote": true`): workers forked from one process of
/// the app that loaded itself once. The real broker, the real notes program and real signals.
///
/// Only a program with a static Swift runtime can be a zygote (with a shared one, the runtime
/// and Dispatch initialise before the zygote could stop). `make test` builds notes that way
/// (`.build-install/release/notes`, the installed form) and sets WINDOWBROKER_STATIC_NOTES; the
/// debug build is used for the refusal.
final class ZygoteTests: BrokerTestCase {
    /// notes as installed (static Swift runtime), or a skip when `make test` did not build it.
    private func staticNotes() throws -> String {
        let path = ProcessInfo.processInfo.environment["WINDOWBROKER_STATIC_NOTES"]
            ?? BrokerHarness.repository.appendingPathComponent(".build-install/release/notes").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            if ProcessInfo.processInfo.environment["WINDOWBROKER_STATIC_NOTES"] != nil {
                throw HarnessError("WINDOWBROKER_STATIC_NOTES=\(path) is not an executable")
            }
            throw XCTSkip("no notes with a static Swift runtime at \(path) (make test builds it)")
        }
        return path
    }

    private func installZygoteNotes(executable: String) throws {
        var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: BrokerHarness.repositoryAppsDirectory + "/notes.json"))) as? [String: Any])
        manifest["executable"] = executable
        manifest["zygote"] = true
        try harness.install(app: "znotes", manifest: manifest)
    }

    private func open(_ noteID: String) throws -> (session: String, launch: String, pid: Int32) {
        let reply = try harness.json("open", "znotes", "--activity", "notes.edit", "--info", "noteID=\(noteID)")
        let session = try XCTUnwrap(reply["session"] as? String)
        let pid = try XCTUnwrap(harness.session(session)["pid"] as? Int)
        return (session, reply["launch"] as? String ?? "", Int32(pid))
    }

    /// The zygote's pid, from the broker's log line that announced it.
    private func zygotePIDs() -> [Int32] {
        harness.brokerLog.split(separator: "\n").filter { $0.contains("app zygote ready") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("pid=") }.flatMap { Int32($0.dropFirst(4)) }
        }
    }

    private func privateAndSharedDirty(_ pid: Int32) throws -> (private: Int, shared: Int) {
        let rollup = try runToCompletion("/bin/cat", ["/proc/\(pid)/smaps_rollup"]).output
        func field(_ name: String) -> Int {
            rollup.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.split(separator: " ")[1]) } ?? -1
        }
        return (field("Private_Dirty"), field("Shared_Dirty"))
    }

    func testScenesAreForkedFromTheAppsZygoteAsTheBrokersOwnChildrenAndWorkAsSpawnedOnes() throws {
        try installZygoteNotes(executable: try staticNotes())
        var opened: [(session: String, launch: String, pid: Int32)] = []
        for i in 1...3 { opened.append(try open("z\(i)")) }
        opened.forEach { harness.remember(pid: $0.pid) }
        XCTAssertEqual(opened.map(\.launch), ["forked", "forked", "forked"], harness.brokerLog)
        let zygotes = zygotePIDs()
        XCTAssertEqual(zygotes.count, 1, "one zygote for the app: \(zygotes)")
        let zygote = try XCTUnwrap(zygotes.first)
        harness.remember(pid: zygote)
        XCTAssertEqual(processStat(zygote)?.parent, harness.brokerPID)
        for scene in opened {
            // The broker's own children: it reaps them and its death ends them.
            XCTAssertEqual(processStat(scene.pid)?.parent, harness.brokerPID, "worker \(scene.pid)")
            XCTAssertNotEqual(scene.pid, zygote)
            // The program's relocated data is the zygote's pages, shared, not a copy of its own.
            let memory = try privateAndSharedDirty(scene.pid)
            XCTAssertGreaterThan(memory.shared, 200, "worker \(scene.pid) shares no dirty pages: \(memory)")
        }
        // They run as any worker: actions, the note written through, each with its own state.
        try harness.type(opened[0].session, "forked text")
        let note = try harness.json("send", opened[0].session, "note")
        XCTAssertEqual((note["value"] as? [String: Any])?["text"] as? String, "forked text")
        let other = try harness.json("send", opened[1].session, "note")
        XCTAssertEqual((other["value"] as? [String: Any])?["text"] as? String, "")

        // A forked worker that is killed is the broker's to reap and report, like a spawned one.
        kill(opened[2].pid, SIGKILL)
        try harness.eventually("the session is unattached after the crash") { try harness.state(opened[2].session) == "unattached" }
        XCTAssertEqual(try harness.session(opened[2].session)["lastDisconnect"] as? String, "crashed(SIGKILL)", "the exit status, as the broker reaped it")
        XCTAssertFalse(processExists(opened[2].pid))
        XCTAssertEqual(harness.zombieChildren(), [])
        let reopened = try harness.json("activate", opened[2].session)
        XCTAssertEqual(reopened["launch"] as? String, "forked")

        // Without its zygote the app still opens: the worker is spawned, and the scenes forked
        // earlier go on (they were never the zygote's children).
        kill(zygote, SIGKILL)
        try harness.eventually("the zygote is reaped") { !processExists(zygote) }
        let afterZygote = try open("z4")
        harness.remember(pid: afterZygote.pid)
        XCTAssertEqual(afterZygote.launch, "spawned")
        XCTAssertTrue(processExists(opened[0].pid))
        try harness.type(opened[0].session, "!")
        XCTAssertEqual(((try harness.json("send", opened[0].session, "note"))["value"] as? [String: Any])?["text"] as? String, "forked text!")
        XCTAssertTrue(harness.brokerLog.contains("the app's zygote ended"), harness.brokerLog)

        // A stopping broker leaves no process of the app behind.
        let pids = opened.map(\.pid) + [afterZygote.pid]
        XCTAssertEqual(harness.stop(), 0)
        try harness.eventually("no worker and no zygote outlives the broker") {
            (pids + [zygote]).allSatisfy { !processExists($0) }
        }
    }

    func testAPrewarmedPoolIsFilledFromTheZygote() throws {
        let notes = try staticNotes()
        var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: BrokerHarness.repositoryAppsDirectory + "/notes.json"))) as? [String: Any])
        manifest["executable"] = notes
        manifest["zygote"] = true
        manifest["prewarm"] = 2
        try harness.install(app: "znotes", manifest: manifest)
        let first = try open("p1")
        harness.remember(pid: first.pid)
        XCTAssertEqual(first.launch, "prewarmed")
        XCTAssertEqual(processStat(first.pid)?.parent, harness.brokerPID)
        let memory = try privateAndSharedDirty(first.pid)
        XCTAssertGreaterThan(memory.shared, 200, "the prewarmed worker was not forked: \(memory)")
        XCTAssertEqual(zygotePIDs().count, 1)
    }

    func testABuildWithASharedSwiftRuntimeSaysWhyItCannotBeAZygoteAndItsScenesAreSpawned() throws {
        // The debug build links the Swift runtime as shared libraries.
        try installZygoteNotes(executable: BrokerHarness.binDirectory + "/notes")
        let first = try open("d1")
        harness.remember(pid: first.pid)
        XCTAssertEqual(first.launch, "spawned")
        try harness.type(first.session, "spawned text")
        XCTAssertEqual(((try harness.json("send", first.session, "note"))["value"] as? [String: Any])?["text"] as? String, "spawned text")
        try harness.eventually("the broker says why there is no zygote") {
            harness.brokerLog.contains("no zygote for the app") && harness.brokerLog.contains("built without --static-swift-stdlib")
        }
        // Asked once: the next scene is spawned without a new attempt.
        let second = try open("d2")
        harness.remember(pid: second.pid)
        XCTAssertEqual(second.launch, "spawned")
        XCTAssertEqual(harness.brokerLog.components(separatedBy: "no zygote for the app").count - 1, 1)
        // The refusing process is gone, not left waiting.
        XCTAssertEqual(harness.children().filter { $0.pid != first.pid && $0.pid != second.pid }.count, 0, "\(harness.children())")
    }
}
