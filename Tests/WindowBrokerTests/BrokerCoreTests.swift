import Foundation
import XCTest

/// The broker core without a global lock: one session's trouble costs only that session.
final class SessionDriverTests: BrokerTestCase {
    func testAHangingSaveStallsOnlyItsOwnSession() throws {
        let (a, aPID) = try harness.noteThatHangsOnSave("a")

        let backgroundA = try harness.start(wmctl: ["--json", "background", a])
        try harness.eventually("a is in the background, stuck in its save") { try harness.state(a) == "background" }

        // Another scene lives its whole life while A's request is still waiting.
        let b = try harness.openNote("b")
        try harness.type(b, "written while a hangs")
        XCTAssertEqual(try harness.json("background", b)["state"] as? String, "background")
        XCTAssertEqual(try harness.json("activate", b)["state"] as? String, "foregroundActive")
        XCTAssertTrue(backgroundA.isRunning, "every reply about b arrived before a's")
        XCTAssertEqual(try harness.noteState(b).text, "written while a hangs")

        // The save failed: an error (exit 1), saying the scene lost its process and what was kept.
        let reply = backgroundA.wait()
        XCTAssertEqual(reply.code, 1, reply.stdout)
        let error = try XCTUnwrap((try reply.json() as? [String: Any])?["error"] as? [String: Any])
        XCTAssertEqual(error["code"] as? String, "timedOut")
        XCTAssertTrue((error["message"] as? String ?? "").contains("last committed restoration activity is kept"), "\(error)")
        XCTAssertTrue((error["message"] as? String ?? "").contains("the scene is unattached"), "\(error)")
        XCTAssertFalse(processExists(aPID))
        XCTAssertEqual(try harness.session(a)["lastDisconnect"] as? String, "timedOut")
        XCTAssertEqual(try harness.state(b), "foregroundActive")
        _ = try harness.json("activate", a)
        XCTAssertEqual(try harness.noteState(a).text, "committed later", "the newest committed state")
    }

    func testOperationsOnOneSessionRunInArrivalOrder() throws {
        let session = try harness.openNote("ordered")
        _ = try harness.json("send", session, "set-save-delay", "--arg", "ms=300")
        // Sent together: the background is slow (its save takes 300 ms); the activate behind it
        // must not overtake it, and the type must land in the active scene.
        let background = try harness.start(wmctl: ["--json", "background", session])
        try harness.eventually("the background request is under way") { try harness.state(session) == "background" }
        let activate = try harness.start(wmctl: ["--json", "activate", session])
        XCTAssertEqual(background.wait().code, 0)
        XCTAssertEqual(activate.wait().code, 0)
        XCTAssertEqual(try harness.noteState(session).callbacks.suffix(5),
                       ["willResignActive", "didEnterBackground", "stateRestorationActivity", "willEnterForeground", "didBecomeActive"])
        XCTAssertEqual(try harness.state(session), "foregroundActive")
    }

    func testAFailedLaunchGivesTheKeyBackToThePreviousScene() throws {
        try harness.install(app: "broken", manifest: [
            "name": "Broken", "executable": "/bin/false", "activityTypes": ["notes.edit"],
        ])
        let a = try harness.openNote("a")
        let refused = try harness.refusal("open", "broken")
        XCTAssertEqual(refused.code, "workerFailed", refused.message)
        XCTAssertEqual(try harness.state(a), "foregroundActive")
        XCTAssertEqual(try harness.noteState(a).callbacks.suffix(2), ["willEnterForeground", "didBecomeActive"],
                       "a stayed active beside the launch")
        try harness.eventually("a is the key scene again") { try harness.session(a)["key"] as? Bool == true && harness.noteState(a).isKey }
    }
}

/// Reclaim saves several scenes at once; LRU order still decides which go.
final class ParallelReclaimTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--reclaim-concurrency", "2", "--mem-available-floor", "0", "--max-foreground", "1"] }

    func testReclaimsRunSideBySideInLRUOrderAndEveryOneRestores() throws {
        var background: [String] = []
        for name in ["oldest", "middle", "newest"] {
            let session = try harness.openNote(name)
            try harness.type(session, "text of \(name)")
            _ = try harness.json("send", session, "set-save-delay", "--arg", "ms=400")
            background.append(session)
        }
        let front = try harness.openNote("front")  // with one foreground slot, the others went to the background
        for session in background { XCTAssertEqual(try harness.state(session), "background") }

        let response = try harness.json("pressure", "simulate", "critical")
        let reclaimed = try XCTUnwrap(response["reclaimed"] as? [[String: Any]])
        XCTAssertEqual(reclaimed.compactMap { $0["session"] as? String }, background, "least recently used first")
        XCTAssertEqual(try harness.state(front), "foregroundActive")

        // Each save takes 400 ms; with two at a time, some of them overlap in time.
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let intervals = reclaimed.compactMap { record -> (Date, Date)? in
            guard let start = (record["startedAt"] as? String).flatMap(format.date), let seconds = record["seconds"] as? Double else { return nil }
            return (start, start.addingTimeInterval(seconds))
        }.sorted { $0.0 < $1.0 }
        XCTAssertEqual(intervals.count, 3)
        XCTAssertTrue(intervals.count == 3 && intervals[1].0 < intervals[0].1, "the second reclaim started before the first ended: \(intervals)")

        for (session, name) in zip(background, ["oldest", "middle", "newest"]) {
            XCTAssertEqual(try harness.session(session)["lastDisconnect"] as? String, "memoryPressure")
            _ = try harness.json("activate", session)
            XCTAssertEqual(try harness.noteState(session).text, "text of \(name)")
        }
    }
}

/// Every way a worker can end leaves no zombie and no descriptor behind.
final class WorkerSupervisionTests: BrokerTestCase {
    // The crashing scene prints its backtrace before it dies, which takes seconds on a busy
    // machine: a short worker deadline would kill it first (timedOut, not SIGSEGV).
    override var brokerArguments: [String] { ["--launch-timeout", "1", "--worker-timeout", "15"] }

    func testNoZombieAndNoLeakedDescriptorAfterCrashKillHelloTimeoutAndClosedSocket() throws {
        try harness.install(app: "sleeper", manifest: [
            "name": "Never says hello", "executable": "/bin/sleep", "arguments": ["3600"], "activityTypes": ["notes.edit"],
        ])
        // Warm up everything the broker creates once (reaper queue, store readers), then count.
        let warm = try harness.openNote("warm")
        _ = try harness.json("close", warm)
        try harness.eventually("no worker runs") { harness.children().isEmpty }
        // By kind: a socket's or a pipe's name changes with each one, and a control
        // connection whose wmctl just ended may still be open when this count is taken.
        func kinds() -> [String: Int] {
            var counts: [String: Int] = [:]
            for target in harness.brokerDescriptors() where !target.contains(harness.stateDirectory) {
                counts[target.hasPrefix("socket:") ? "socket" : target.hasPrefix("pipe:") ? "pipe" : target, default: 0] += 1
            }
            return counts
        }
        func grown(from before: [String: Int]) -> [String: Int] {
            kinds().filter { $0.value > before[$0.key, default: 0] }
        }
        let before = kinds()

        // 1. A crash (a real fault in the scene).
        let crashing = try harness.openNote("crash")
        _ = harness.wmctl("send", crashing, "crash")
        try harness.eventually("the crashed scene is unattached") { try harness.state(crashing) == "unattached" }
        XCTAssertEqual(try harness.session(crashing)["lastDisconnect"] as? String, "crashed(SIGSEGV)")

        // 2. kill -9 from outside.
        let killed = try harness.openNote("killed")
        kill(try harness.noteState(killed).pid, SIGKILL)
        try harness.eventually("the killed scene is unattached") { try harness.state(killed) == "unattached" }
        XCTAssertEqual(try harness.session(killed)["lastDisconnect"] as? String, "crashed(SIGKILL)")

        // 3. A process that never says Hello.
        let silent = try harness.refusal("open", "sleeper", "--activity", "notes.edit")
        XCTAssertEqual(silent.code, "workerFailed", silent.message)
        XCTAssertTrue(silent.message.contains("did not connect within 1 s"), silent.message)

        // 4. A process that closes its socket and runs on.
        let closing = try harness.openNote("closing")
        let closingPID = try harness.noteState(closing).pid
        let refused = try harness.refusal("send", closing, "close-socket")
        XCTAssertEqual(refused.code, "workerFailed", refused.message)
        try harness.eventually("the scene that lost its connection is unattached") { try harness.state(closing) == "unattached" }
        XCTAssertEqual(try harness.session(closing)["lastDisconnect"] as? String, "connectionLost")
        XCTAssertFalse(processExists(closingPID), "it was stopped, not left running")

        // Waited for, then asserted with what is left: a failure says which.
        try? harness.eventually("every child is reaped and no kind of descriptor outnumbers its count before", timeout: 10) {
            harness.children().isEmpty && grown(from: before).isEmpty
        }
        XCTAssertEqual(harness.children().map(\.pid), [])
        XCTAssertEqual(harness.zombieChildren(), [])
        XCTAssertEqual(grown(from: before), [:], "before: \(before), now: \(kinds())")
        XCTAssertEqual(harness.wmctl("status").code, 0)
    }
}

/// Prewarmed workers: started, handshaken and idle until a scene needs one.
final class PrewarmTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--mem-available-floor", "0"] }

    private func prewarmed(_ app: String) throws -> Int? {
        (try harness.json("status")["prewarmed"] as? [String: Any])?[app] as? Int
    }

    func testOpeningFromThePoolSkipsTheSpawnAndKeepsTheCallbackOrder() throws {
        try harness.installNotes(as: "warm", ["prewarm": 1])
        try harness.eventually("one warm worker is ready") { try prewarmed("warm") == 1 }
        let pooled = try XCTUnwrap(harness.children().first?.pid)

        let reply = try harness.json("open", "warm", "--activity", "notes.edit", "--info", "noteID=w", "--title", "w")
        XCTAssertEqual(reply["launch"] as? String, "prewarmed")
        let session = try XCTUnwrap(reply["session"] as? String)
        let note = try harness.noteState(session)
        XCTAssertEqual(note.pid, pooled, "the pool's process now hosts the scene")
        XCTAssertEqual(note.callbacks, ["didFinishLaunching", "willConnect", "willEnterForeground", "didBecomeActive"])
        try harness.eventually("the pool refills") { try prewarmed("warm") == 1 }

        try harness.type(session, "kept")
        _ = try harness.json("background", session)
        _ = try harness.json("reclaim", session)
        let again = try harness.json("activate", session)
        XCTAssertEqual(again["launch"] as? String, "prewarmed")
        let restored = try harness.noteState(session)
        XCTAssertEqual(restored.text, "kept")
        XCTAssertEqual(restored.callbacks, ["didFinishLaunching", "willConnect", "restoreInteractionState", "willEnterForeground", "didBecomeActive"])

        XCTAssertEqual(try harness.json("activate", session)["launch"] as? String, "existing")
        XCTAssertEqual(try harness.json("open", "notes", "--activity", "notes.edit", "--info", "noteID=cold")["launch"] as? String, "spawned")
    }

    /// Issue 67 item 13. Before: after the manifest changed and a SIGHUP, opens bound idle
    /// processes started from the old manifest (5 of 6 runs), even once its executable was
    /// /bin/false.
    func testAManifestChangeDrainsThePoolOfProcessesStartedFromTheOldManifest() throws {
        try harness.installNotes(as: "warm", ["prewarm": 1])
        try harness.eventually("one warm worker is ready") { try prewarmed("warm") == 1 }
        let stale = try XCTUnwrap(harness.children().first?.pid)
        try harness.installNotes(as: "warm", ["prewarm": 1, "executable": "/bin/false"])
        try harness.eventually("the process started from the old manifest is gone") { !processExists(stale) }
        let opened = harness.wmctl("open", "warm", "--activity", "notes.edit", "--info", "noteID=stale", "--json")
        XCTAssertNotEqual(opened.code, 0, "only the new manifest's program may answer, and /bin/false does not: \(opened.stdout)")
    }

    /// A prewarmed scene is bound while its session's record commits. When the store refuses
    /// that record, the scene was told of a session that is not kept: it is told the session
    /// was discarded (the app deletes what it kept for it), its process goes, and the open
    /// fails saying nothing was kept.
    func testAPrewarmedSceneWhoseSessionCannotBeStoredIsToldItWasDiscarded() throws {
        try harness.installNotes(as: "warm", ["prewarm": 1])
        try harness.eventually("one warm worker is ready") { try prewarmed("warm") == 1 }
        let pooled = try XCTUnwrap(harness.children().first?.pid)
        let database = harness.stateDirectory + "/state.sqlite"
        let refuse = harness.run("/usr/bin/sqlite3", [database,
            "CREATE TRIGGER refuse_sessions BEFORE INSERT ON session BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;"])
        XCTAssertEqual(refuse.code, 0, refuse.stderr)
        let watch = try harness.startWatch(["--app", "warm"])

        let refusal = try harness.refusal("open", "warm", "--activity", "notes.edit", "--info", "noteID=unstored")
        XCTAssertTrue(refusal.message.contains("create a session of 'warm'") && refusal.message.contains("no session was kept"), refusal.message)
        XCTAssertEqual(try harness.jsonList("sessions").count, 0, "nothing was kept")
        try harness.eventually("the scene's process is gone") { !processExists(pooled) }
        let drafts = (try? FileManager.default.contentsOfDirectory(atPath: harness.notesDataDirectory + "/drafts")) ?? []
        XCTAssertEqual(drafts, [], "the app deleted what it kept for the session")

        let allow = harness.run("/usr/bin/sqlite3", [database, "DROP TRIGGER refuse_sessions;"])
        XCTAssertEqual(allow.code, 0, allow.stderr)
        try harness.eventually("the pool refills") { try prewarmed("warm") == 1 }
        let reply = try harness.json("open", "warm", "--activity", "notes.edit", "--info", "noteID=stored")
        XCTAssertEqual(reply["launch"] as? String, "prewarmed")
        watch.stop()
        let events = watch.jsonLines.map { $0["event"] as? String ?? "" }
        XCTAssertEqual(Array(events.prefix(2)), ["created", "launched"], "\(events)")
        XCTAssertTrue(events.contains("didDisconnect") && events.contains("discarded"), "\(events)")
    }

    func testPressureEmptiesThePoolBeforeWarningAnyScene() throws {
        try harness.installNotes(as: "warm", ["prewarm": 1])
        try harness.eventually("one warm worker is ready") { try prewarmed("warm") == 1 }
        let pooled = try XCTUnwrap(harness.children().first?.pid)
        let cached = try harness.openNote("cached")
        _ = try harness.json("background", cached)

        let watch = try harness.startWatch(["--event", "exited", "--event", "didReceiveMemoryWarning", "--count", "2"])
        let response = try harness.json("pressure", "simulate", "warning")
        XCTAssertEqual((response["warned"] as? [[String: Any]])?.compactMap { $0["session"] as? String }, [cached])
        XCTAssertEqual(watch.wait().code, 0)
        let events = watch.jsonLines
        XCTAssertEqual(events.map { $0["event"] as? String ?? "" }, ["exited", "didReceiveMemoryWarning"], "\(events)")
        XCTAssertEqual(events.first?["app"] as? String, "warm")
        XCTAssertEqual(events.first?["session"] as? String, "", "a pool worker has no session")
        try harness.eventually("the pool's process is gone") { !processExists(pooled) }
    }
}

/// `wmctl watch` filters, applied by the broker.
final class WatchFilterTests: BrokerTestCase {
    func testEachWatcherSeesOnlyWhatItAskedFor() throws {
        let a = try harness.openNote("a")
        let bySession = try harness.startWatch(["--session", a])
        let byApp = try harness.startWatch(["--app", "notes-single"])
        let byEvent = try harness.startWatch(["--event", "didBecomeActive", "--event", "created"])

        let b = try harness.openNote("b")
        _ = try harness.json("background", a)
        _ = try harness.json("activate", a)
        let single = try harness.openNote("s", app: "notes-single")
        // The last event each watcher is owed has arrived: a session's events come in order.
        try harness.eventually("each watcher has what it asked for") {
            func has(_ watcher: BrokerHarness.Running, _ event: String, _ session: String) -> Bool {
                watcher.jsonLines.contains { $0["event"] as? String == event && $0["session"] as? String == session }
            }
            return has(byEvent, "didBecomeActive", single) && has(byApp, "didBecomeActive", single) && has(bySession, "didBecomeActive", a)
        }

        for watcher in [bySession, byApp, byEvent] { watcher.stop() }
        let sessionEvents = bySession.jsonLines
        let appEvents = byApp.jsonLines
        let namedEvents = byEvent.jsonLines

        XCTAssertFalse(sessionEvents.isEmpty)
        XCTAssertTrue(sessionEvents.allSatisfy { $0["session"] as? String == a }, "\(sessionEvents)")
        XCTAssertTrue(sessionEvents.contains { $0["event"] as? String == "didEnterBackground" })
        XCTAssertFalse(appEvents.isEmpty)
        XCTAssertTrue(appEvents.allSatisfy { $0["app"] as? String == "notes-single" && $0["session"] as? String == single }, "\(appEvents)")
        XCTAssertEqual(Set(namedEvents.compactMap { $0["event"] as? String }), ["created", "didBecomeActive"])
        XCTAssertEqual(namedEvents.filter { $0["event"] as? String == "created" }.compactMap { $0["session"] as? String }, [b, single])

        XCTAssertEqual(try harness.refusal("watch", "--event", "didBecomeActiv").code, "invalidRequest")
    }
}
