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
    private func open(_ noteID: String) throws -> (session: String, launch: String, pid: Int32) {
        let reply = try harness.json("open", "znotes", "--activity", "notes.edit", "--info", "noteID=\(noteID)")
        let session = try XCTUnwrap(reply["session"] as? String)
        let pid = try XCTUnwrap(harness.session(session)["pid"] as? Int)
        return (session, reply["launch"] as? String ?? "", Int32(pid))
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
        try installZygoteNotes(in: harness, executable: try staticNotes())
        // It starts when the broker reads the manifest: the first open does not wait for it.
        try harness.eventually("the zygote starts before any scene is opened") { zygotePIDs(announcedIn: harness).count == 1 }
        XCTAssertEqual(try harness.jsonList("sessions").count, 0)
        var opened: [(session: String, launch: String, pid: Int32)] = []
        for i in 1...3 { opened.append(try open("z\(i)")) }
        opened.forEach { harness.remember(pid: $0.pid) }
        XCTAssertEqual(opened.map(\.launch), ["forked", "forked", "forked"], harness.brokerLog)
        let zygotes = zygotePIDs(announcedIn: harness)
        XCTAssertEqual(zygotes.count, 1, "one zygote for the app: \(zygotes)")
        let zygote = try XCTUnwrap(zygotes.first)
        harness.remember(pid: zygote)
        XCTAssertEqual(processStat(zygote)?.parent, harness.brokerPID)
        // It ran a scene's connection once before forking (an event loop, a socket, a pipe):
        // none of it is left for a child to share, and it is one thread again.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(zygote)/fd").compactMap(Int.init).sorted()
        XCTAssertEqual(descriptors, [0, 1, 2, 3], "the zygote holds only its standard streams and its channel")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(zygote)/task").count, 1)
        // `wmctl apps` says how the app starts, and `wmctl status` names its zygote.
        let app = try XCTUnwrap(try harness.jsonList("apps").first { $0["id"] as? String == "znotes" })
        XCTAssertEqual(app["zygote"] as? String, "ready, pid \(zygote)")
        XCTAssertEqual((try harness.json("status")["zygotes"] as? [String: Any])?["znotes"] as? Int, Int(zygote))
        XCTAssertTrue(harness.wmctl("status").stdout.contains("zygotes: znotes (pid \(zygote))"), harness.wmctl("status").stdout)
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
        XCTAssertEqual((try harness.json("status")["zygotes"] as? [String: Any])?.count, 0)
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

    func testAZygoteThatDoesNotAnswerIsReplacedBySpawningAndEnded() throws {
        try installZygoteNotes(in: harness, executable: try staticNotes())
        try harness.eventually("the zygote is ready") { zygotePIDs(announcedIn: harness).count == 1 }
        let zygote = try XCTUnwrap(zygotePIDs(announcedIn: harness).first)
        harness.remember(pid: zygote)
        // Stopped, it takes the request and never answers.
        kill(zygote, SIGSTOP)
        let scene = try open("hung")
        harness.remember(pid: scene.pid)
        XCTAssertEqual(scene.launch, "spawned")
        XCTAssertTrue(harness.brokerLog.contains("could not fork a worker; spawning it instead"), harness.brokerLog)
        try harness.type(scene.session, "still opens")
        try harness.eventually("the zygote that did not answer is ended and reaped") { !processExists(zygote) }
        // Until it is tried again, scenes are spawned without waiting for a zygote.
        XCTAssertEqual(try open("next").launch, "spawned")
        let app = try XCTUnwrap(try harness.jsonList("apps").first { $0["id"] as? String == "znotes" })
        XCTAssertTrue((app["zygote"] as? String ?? "").hasPrefix("unavailable: could not fork: it did not answer within 2000 ms (tried again"), "\(app)")
    }

    func testAnAppNotOnTheSDKCannotBeAZygoteAndItsScenesAreSpawned() throws {
        // The Python example: it takes the zygote's channel for its socket and says Hello there.
        let examples = BrokerHarness.repository.appendingPathComponent("Examples/python").path
        let data = try Data(contentsOf: URL(fileURLWithPath: examples + "/apps/tally.json"))
        var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        manifest["executable"] = examples + "/tally.py"
        manifest["zygote"] = true
        try harness.install(app: "ztally", manifest: manifest)
        try harness.eventually("the broker says why the app has no zygote") {
            harness.brokerLog.contains("does not speak the zygote's protocol")
        }
        let reply = try harness.json("open", "ztally")
        XCTAssertEqual(reply["launch"] as? String, "spawned")
        let session = try XCTUnwrap(reply["session"] as? String)
        try harness.eventually("the Python scene is active") { try harness.state(session) == "foregroundActive" }
        XCTAssertEqual((try harness.json("status")["zygotes"] as? [String: Any])?.count, 0)
    }

    func testAPrewarmedPoolIsFilledFromTheZygote() throws {
        try installZygoteNotes(in: harness, executable: try staticNotes(), ["prewarm": 2])
        let first = try open("p1")
        harness.remember(pid: first.pid)
        XCTAssertEqual(first.launch, "prewarmed")
        XCTAssertEqual(processStat(first.pid)?.parent, harness.brokerPID)
        let memory = try privateAndSharedDirty(first.pid)
        XCTAssertGreaterThan(memory.shared, 200, "the prewarmed worker was not forked: \(memory)")
        XCTAssertEqual(zygotePIDs(announcedIn: harness).count, 1)
    }

    func testABuildWithASharedSwiftRuntimeSaysWhyItCannotBeAZygoteAndItsScenesAreSpawned() throws {
        // The debug build links the Swift runtime as shared libraries.
        try installZygoteNotes(in: harness, executable: BrokerHarness.binDirectory + "/notes")
        let first = try open("d1")
        harness.remember(pid: first.pid)
        XCTAssertEqual(first.launch, "spawned")
        try harness.type(first.session, "spawned text")
        XCTAssertEqual(((try harness.json("send", first.session, "note"))["value"] as? [String: Any])?["text"] as? String, "spawned text")
        try harness.eventually("the broker says why there is no zygote") {
            harness.brokerLog.contains("no zygote for the app") && harness.brokerLog.contains("built without --static-swift-stdlib")
        }
        let app = try XCTUnwrap(try harness.jsonList("apps").first { $0["id"] as? String == "znotes" })
        XCTAssertEqual(app["zygote"] as? String, "unavailable: the Swift runtime is a shared library here (built without --static-swift-stdlib), so it started before the zygote could")
        XCTAssertTrue(harness.wmctl("apps").stdout.contains("znotes: zygote unavailable: the Swift runtime is a shared library"), harness.wmctl("apps").stdout)
        XCTAssertNil(try harness.jsonList("apps").first { $0["id"] as? String == "notes" }?["zygote"], "no zygote asked, none said")
        // Asked once: the next scene is spawned without a new attempt.
        let second = try open("d2")
        harness.remember(pid: second.pid)
        XCTAssertEqual(second.launch, "spawned")
        XCTAssertEqual(harness.brokerLog.components(separatedBy: "no zygote for the app").count - 1, 1)
        // The refusing process is gone, not left waiting.
        XCTAssertEqual(harness.children().filter { $0.pid != first.pid && $0.pid != second.pid }.count, 0, "\(harness.children())")
        // A manifest that names another build (here the static one) gets its zygote.
        try installZygoteNotes(in: harness, executable: try staticNotes())
        try harness.eventually("the app's new build is a zygote") { zygotePIDs(announcedIn: harness).count == 1 }
        XCTAssertEqual(try open("d3").launch, "forked")
    }
}

/// An app's own start runs once, in its zygote, before the SDK's: a thread it starts there
/// would not exist in the scenes forked from it, so such a zygote says why and ends, and the
/// app's scenes are spawned.
final class ZygoteThreadTests: XCTestCase {
    func testAnAppThatStartsAThreadBeforeTheSDKGetsNoZygoteAndItsScenesAreSpawned() throws {
        let harness = try BrokerHarness()
        defer { harness.tearDown() }
        harness.brokerEnvironment["SCENE_PROBE_THREAD_BEFORE_RUN"] = "1"
        try harness.start()
        let probe = URL(fileURLWithPath: try staticNotes()).deletingLastPathComponent().appendingPathComponent("scene-probe").path
        guard FileManager.default.isExecutableFile(atPath: probe) else {
            throw HarnessError("no \(probe): make test builds it beside the static notes")
        }
        try installZygoteNotes(in: harness, executable: probe)
        try harness.eventually("the broker says why the app has no zygote") {
            harness.brokerLog.contains("the app started a thread before SceneWorker.run")
        }
        let app = try XCTUnwrap(try harness.jsonList("apps").first { $0["id"] as? String == "znotes" })
        XCTAssertTrue((app["zygote"] as? String ?? "").hasPrefix("unavailable: the app started a thread before SceneWorker.run"), "\(app)")
        let reply = try harness.json("open", "znotes", "--activity", "notes.edit", "--info", "noteID=t1")
        XCTAssertEqual(reply["launch"] as? String, "spawned")
        let session = try XCTUnwrap(reply["session"] as? String)
        harness.remember(pid: Int32(try XCTUnwrap(harness.session(session)["pid"] as? Int)))
        try harness.eventually("the spawned scene is active") { try harness.state(session) == "foregroundActive" }
        XCTAssertEqual((try harness.json("status")["zygotes"] as? [String: Any])?.count, 0)
        // The process that refused is gone, not left waiting.
        XCTAssertEqual(harness.children().count, 1, "\(harness.children())")
    }
}

/// notes as installed (static Swift runtime), or a skip when `make test` did not build it.
func staticNotes() throws -> String {
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

/// The notes manifest as app `znotes`, run by `executable`, with a zygote (and `fields`).
func installZygoteNotes(in harness: BrokerHarness, executable: String, _ fields: [String: Any] = [:]) throws {
    let data = try Data(contentsOf: URL(fileURLWithPath: BrokerHarness.repositoryAppsDirectory + "/notes.json"))
    var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    manifest["executable"] = executable
    manifest["zygote"] = true
    manifest.merge(fields) { _, new in new }
    try harness.install(app: "znotes", manifest: manifest)
}

/// The zygotes' pids, from the broker's log lines that announced them.
func zygotePIDs(announcedIn harness: BrokerHarness) -> [Int32] {
    harness.brokerLog.split(separator: "\n").filter { $0.contains("app zygote ready") }.compactMap { line in
        line.split(separator: " ").first { $0.hasPrefix("pid=") }.flatMap { Int32($0.dropFirst(4)) }
    }
}

/// With a display, a zygote's forked scenes each initialise GTK and open a window of their own:
/// the zygote forks before any of that (GTK cannot be forked once it has a display connection).
final class ZygoteWindowTests: WindowTestCase {
    func testTheZygoteForksScenesThatEachOpenTheirOwnGtkWindow() throws {
        try installZygoteNotes(in: harness, executable: try staticNotes())
        var sessions: [String] = []
        for noteID in ["w1", "w2"] {
            let reply = try harness.json("open", "znotes", "--activity", "notes.edit", "--info", "noteID=\(noteID)")
            XCTAssertEqual(reply["launch"] as? String, "forked", harness.brokerLog)
            sessions.append(try XCTUnwrap(reply["session"] as? String))
        }
        try harness.eventually("both windows are mapped (drawn)") {
            try sessions.allSatisfy { try window(of: $0) != nil }
        }
        for session in sessions {
            XCTAssertEqual(try window(of: session)?.appID, "znotes")
        }
        let zygote = try XCTUnwrap(zygotePIDs(announcedIn: harness).first)
        harness.remember(pid: zygote)
        // GTK is loaded (the program links it), never initialised: the zygote forks only as a
        // single thread and has no window of its own; only the scenes do.
        XCTAssertTrue(try mappedFiles(of: Int(zygote)).contains("libgtk-4.so"), "the zygote is the app's program")
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(zygote)/task")
        XCTAssertEqual(threads.count, 1, "zygote threads: \(threads)")
        XCTAssertNil(try sway.windows().first { $0.pid == zygote })
        // A scene typed into redraws as any other.
        _ = try harness.json("send", sessions[0], "type", "--arg", "text=drawn after a fork")
        let note = try harness.json("send", sessions[0], "note")
        XCTAssertEqual((note["value"] as? [String: Any])?["text"] as? String, "drawn after a fork")
    }
}
