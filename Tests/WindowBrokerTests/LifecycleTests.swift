import Foundation
import XCTest

/// The callback order docs/LIFECYCLE.md makes part of the contract, checked from the worker's own
/// record of what it received.
final class LifecycleTests: BrokerTestCase {
    func testNewSceneGetsLaunchConnectForegroundActive() throws {
        let session = try harness.openNote("packing", title: "Packing list")
        let note = try harness.noteState(session)
        XCTAssertEqual(note.callbacks, ["didFinishLaunching", "willConnect", "willEnterForeground", "didBecomeActive"])
        XCTAssertEqual(try harness.state(session), "foregroundActive")
        XCTAssertEqual(try harness.session(session)["title"] as? String, "Packing list")
    }

    func testBackgroundThenForegroundOrder() throws {
        let session = try harness.openNote("a")
        XCTAssertEqual(try harness.json("background", session)["state"] as? String, "background")
        XCTAssertEqual(try harness.json("activate", session)["state"] as? String, "foregroundActive")
        let note = try harness.noteState(session)
        XCTAssertEqual(note.callbacks, [
            "didFinishLaunching", "willConnect", "willEnterForeground", "didBecomeActive",
            "willResignActive", "didEnterBackground", "stateRestorationActivity",
            "willEnterForeground", "didBecomeActive",
        ])
        XCTAssertEqual(try harness.session(session)["hasRestoration"] as? Bool, true)
    }

    func testReclaimThenReactivateRestoresTextAndCursorInOrder() throws {
        let session = try harness.openNote("packing")
        try harness.type(session, "socks, passport")
        _ = try harness.json("send", session, "move-cursor", "--arg", "position=5")
        let before = try harness.noteState(session)
        _ = try harness.json("background", session)
        let reclaimed = try harness.json("reclaim", session)
        XCTAssertEqual(reclaimed["state"] as? String, "unattached")
        try harness.eventually("the reclaimed worker is gone") { !processExists(before.pid) }

        let listed = try harness.session(session)
        XCTAssertEqual(listed["state"] as? String, "unattached")
        XCTAssertEqual(listed["lastDisconnect"] as? String, "reclaimed")
        XCTAssertTrue(listed["pid"] is NSNull)
        XCTAssertEqual(listed["hasRestoration"] as? Bool, true)

        XCTAssertEqual(try harness.json("activate", session)["state"] as? String, "foregroundActive")
        let after = try harness.noteState(session)
        XCTAssertNotEqual(after.pid, before.pid, "a new process hosts the scene")
        XCTAssertEqual(after.text, "socks, passport")
        XCTAssertEqual(after.cursor, 5)
        XCTAssertEqual(after.callbacks, ["didFinishLaunching", "willConnect", "restoreInteractionState", "willEnterForeground", "didBecomeActive"])
    }

    func testShowCarriesTheRestorationActivity() throws {
        let session = try harness.openNote("trip")
        try harness.type(session, "tickets")
        _ = try harness.json("background", session)
        let shown = try harness.json("show", session)
        let activity = try XCTUnwrap(shown["restorationActivity"] as? [String: Any])
        XCTAssertEqual(activity["activityType"] as? String, "notes.edit")
        XCTAssertEqual(activity["targetContentIdentifier"] as? String, "trip")
        let info = try XCTUnwrap(activity["userInfo"] as? [String: Any])
        XCTAssertEqual(info["text"] as? String, "tickets")
    }

    func testDiscardOfConnectedSceneIsDeliveredOnceToItsOwnProcess() throws {
        let first = try harness.openNote("one")
        let second = try harness.openNote("two")
        try harness.type(first, "draft text")
        let draft = harness.notesDataDirectory + "/drafts/\(first).txt"
        XCTAssertTrue(FileManager.default.fileExists(atPath: draft))
        let firstPID = try harness.noteState(first).pid

        XCTAssertEqual(try harness.json("close", first)["state"] as? String, "unattached")
        try harness.eventually("the discarded worker exits") { !processExists(firstPID) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: draft), "the app deleted the discarded session's draft")
        XCTAssertEqual(try harness.noteState(second).discarded, [], "delivered once, to the discarded scene's own process")
        XCTAssertFalse(try harness.jsonList("sessions").contains { $0["id"] as? String == first })
        XCTAssertEqual(try harness.refusal("show", first).code, "sessionDiscarded")
        XCTAssertEqual(try harness.refusal("activate", first).code, "sessionDiscarded")
    }

    func testDiscardWithNoRunningWorkerIsDeliveredAtNextLaunchBeforeWillConnect() throws {
        let old = try harness.openNote("old")
        try harness.type(old, "old draft")
        _ = try harness.json("background", old)
        _ = try harness.json("reclaim", old)
        try harness.eventually("no notes worker runs") { (try harness.json("status")["workers"] as? Int) == 0 }

        let closed = try harness.json("close", old)
        XCTAssertTrue((closed["detail"] as? String ?? "").contains("next launch"), "\(closed)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: harness.notesDataDirectory + "/drafts/\(old).txt"), "nobody was told yet")

        let fresh = try harness.openNote("new")
        let note = try harness.noteState(fresh)
        XCTAssertEqual(note.callbacks, ["didFinishLaunching", "didDiscardSceneSessions", "willConnect", "willEnterForeground", "didBecomeActive"])
        XCTAssertEqual(note.discarded, [old])
        XCTAssertFalse(FileManager.default.fileExists(atPath: harness.notesDataDirectory + "/drafts/\(old).txt"))

        // Delivered once: the next launch does not get it again.
        let another = try harness.openNote("another")
        XCTAssertEqual(try harness.noteState(another).discarded, [])
    }

    /// Every visible scene is active; the key scene is the one last brought forward, and
    /// the foreground holds `--max-foreground` scenes (two here).
    func testVisibleScenesAreAllActiveTheKeyMovesAndTheForegroundIsBounded() throws {
        let a = try harness.openNote("a")
        let b = try harness.openNote("b")
        func states() throws -> [String: String] {
            Dictionary(uniqueKeysWithValues: try harness.jsonList("sessions").map { ($0["id"] as! String, $0["state"] as! String) })
        }
        func key() throws -> [String] {
            try harness.jsonList("sessions").filter { $0["key"] as? Bool == true }.map { $0["id"] as! String }
        }
        XCTAssertEqual(try states(), [a: "foregroundActive", b: "foregroundActive"], "side by side, both active")
        try harness.eventually("b is the key scene, alone") { try key() == [b] }
        try harness.eventually("a was told it is no longer key") { try harness.noteState(a).keyChanges == ["didBecomeKey", "didResignKey"] }
        XCTAssertEqual(try harness.noteState(a).callbacks.suffix(1), ["didBecomeActive"], "a did not resign active")
        XCTAssertEqual(try harness.noteState(b).keyChanges, ["didBecomeKey"])
        XCTAssertEqual(try harness.noteState(b).isKey, true)

        let c = try harness.openNote("c")
        // Split view holds two: the least recently used (a) went to the background, saved.
        XCTAssertEqual(try states(), [a: "background", b: "foregroundActive", c: "foregroundActive"])
        XCTAssertEqual(try harness.session(a)["hasRestoration"] as? Bool, true)
        try harness.eventually("c is the key scene") { try key() == [c] }

        _ = try harness.json("activate", a)
        XCTAssertEqual(try states(), [a: "foregroundActive", b: "background", c: "foregroundActive"])
        try harness.eventually("a is the key scene") { try key() == [a] }
        XCTAssertTrue(harness.wmctl("show", a).stdout.contains("(the key scene: keyboard focus)"))

        // The key scene goes: the most recently used visible one is key next.
        _ = try harness.json("background", a)
        try harness.eventually("c is key again") { try key() == [c] }
    }

    func testTargetContentPreferenceReusesTheScene() throws {
        let first = try harness.json("open", "notes", "--activity", "notes.edit", "--target", "groceries", "--info", "noteID=groceries")
        XCTAssertEqual(first["created"] as? Bool, true)
        let session = try XCTUnwrap(first["session"] as? String)
        let again = try harness.json("open", "notes", "--activity", "notes.edit", "--target", "groceries")
        XCTAssertEqual(again["created"] as? Bool, false)
        XCTAssertEqual(again["session"] as? String, session)
        XCTAssertEqual(try harness.noteState(session).continued, ["notes.edit"])
        let forced = try harness.json("open", "notes", "--activity", "notes.edit", "--target", "groceries", "--new")
        XCTAssertEqual(forced["created"] as? Bool, true)
    }

    func testSingleSceneAppActivatesItsSceneInsteadOfOpeningAnother() throws {
        let first = try harness.openNote("only", app: "notes-single")
        let second = try harness.json("open", "notes-single", "--activity", "notes.edit", "--title", "other")
        XCTAssertEqual(second["session"] as? String, first)
        XCTAssertEqual(second["created"] as? Bool, false)
        XCTAssertEqual(try harness.noteState(first).continued, ["notes.edit"])
        let refused = try harness.refusal("open", "notes-single", "--activity", "notes.edit", "--new")
        XCTAssertEqual(refused.code, "multipleScenesUnsupported")
        XCTAssertEqual(try harness.jsonList("sessions", "--app", "notes-single").count, 1)
    }

    func testWatchStreamsLifecycleEvents() throws {
        let watcher = try harness.startWatch(["--count", "5", "--timeout", "30"])
        let session = try harness.openNote("watched")
        XCTAssertEqual(watcher.wait().code, 0)
        let events = watcher.jsonLines
        XCTAssertEqual(events.map { $0["event"] as? String ?? "" }, ["created", "launched", "willConnect", "willEnterForeground", "didBecomeActive"])
        XCTAssertTrue(events.allSatisfy { $0["session"] as? String == session && $0["app"] as? String == "notes" && $0["time"] is String })
    }
}

/// What a worker inherits: its socket on fd 3 and nothing of the broker's.
final class WorkerIsolationTests: BrokerTestCase {
    /// stdout and stderr are shared on purpose (a scene's output lands where the broker's does).
    func testAWorkerHoldsNoDescriptorOfTheBroker() throws {
        let session = try harness.openNote("isolated")
        try harness.type(session, "x")
        _ = try harness.json("background", session)  // the store has been written: its files are open in the broker
        let files = try XCTUnwrap(try harness.json("send", session, "open-files")["value"] as? [String])
        XCTAssertTrue(files.contains { $0.hasPrefix("3 -> socket:") }, "\(files)")
        for file in files {
            XCTAssertFalse(file.contains(harness.stateDirectory), "a broker file leaked into the worker: \(file)")
            XCTAssertFalse(file.contains(harness.runtimeDirectory), "a broker file leaked into the worker: \(file)")
        }
    }

    func testTheSceneIsServedFromItsMainThread() throws {
        // A command is read, handled by the delegate and answered on the process's main
        // thread: no event loop thread of NIO's own to hand it over from.
        let session = try harness.openNote("threads")
        let value = try XCTUnwrap(try harness.json("send", session, "threads")["value"] as? [String: Any])
        XCTAssertEqual(value["onMainThread"] as? Bool, true, "\(value)")
        let threads = try XCTUnwrap(value["threads"] as? [String])
        XCTAssertFalse(threads.contains { $0.hasPrefix("NIO-") }, "an event loop thread besides the main thread: \(threads)")
        // The scene still works as before: it is typed into and reports what it shows.
        try harness.type(session, "on main")
        try harness.eventually("the scene reports its text") {
            let info = (try harness.json("show", session)["currentActivity"] as? [String: Any])?["userInfo"] as? [String: Any]
            return info?["text"] as? String == "on main"
        }
    }

    func testTheSceneReportsItsCurrentActivity() throws {
        let session = try harness.openNote("current")
        try harness.type(session, "live text")
        try harness.eventually("the broker keeps the scene's latest user activity") {
            let shown = try harness.json("show", session)
            let info = (shown["currentActivity"] as? [String: Any])?["userInfo"] as? [String: Any]
            return info?["text"] as? String == "live text"
        }
        XCTAssertTrue(try harness.json("show", session)["restorationActivity"] is NSNull, "nothing was saved yet")
    }
}

/// `--log journald` where there is no journal (this machine runs no systemd): entries would be
/// lost without a word, so the broker says so and logs to stderr.
final class JournalLoggingTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--log", "journald"] }

    func testWithNoJournalTheBrokerSaysSoAndLogsToStderr() throws {
        try XCTSkipIf(FileManager.default.fileExists(atPath: "/run/systemd/journal/socket"), "a journal runs here")
        let session = try harness.openNote("journaled")
        XCTAssertEqual(try harness.state(session), "foregroundActive")
        XCTAssertTrue(harness.brokerLog.contains("no journal to log to"), harness.brokerLog)
        XCTAssertTrue(harness.brokerLog.contains("windowbrokerd:"), "log lines go to stderr")
    }
}

/// What an operator sees at the default level: each lifecycle step once, at info, with the
/// session, the app and the step as fields (issue 22).
final class OperatorLogTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--log-level", "info"] }

    func testLifecycleStepsAreLoggedAtInfoWithTheirFields() throws {
        let session = try harness.openNote("logged")
        _ = try harness.json("background", session)
        _ = try harness.json("reclaim", session)
        _ = try harness.json("activate", session)
        _ = try harness.json("close", session)
        let lines = harness.brokerLog.split(separator: "\n").filter { $0.contains("SESSION_ID=\(session)") }
        for step in ["created", "launched", "didEnterBackground", "exited", "restoreInteractionState", "discarded"] {
            XCTAssertTrue(lines.contains { $0.contains(" info ") && $0.contains("EVENT=\(step)") && $0.contains("APP_ID=notes") },
                          "\(step) at info: \(lines.joined(separator: "\n"))")
        }
        XCTAssertFalse(lines.contains { $0.contains("EVENT=willEnterForeground") }, "the other steps stay at debug")
        // Written once the step that emitted them is done, and still in the order they happened.
        let order = ["created", "launched", "didEnterBackground", "exited", "restoreInteractionState", "discarded"]
        let logged = lines.compactMap { line in order.first { line.contains("EVENT=\($0)") } }
        let firsts = order.map { logged.firstIndex(of: $0) ?? -1 }
        XCTAssertEqual(firsts, firsts.sorted(), "each step's first line in the order the steps came: \(logged)")
        let ready = try XCTUnwrap(harness.brokerLog.split(separator: "\n").first { $0.contains(" ready") })
        XCTAssertTrue(ready.contains("BROKER_PID=\(harness.brokerPID)") && !ready.contains("WORKER_PID"), String(ready))
    }
}

/// A new session's process starts while the session's record commits (a cold open no longer
/// waits for the insert); the scene hears of the session only once it is stored. The callback
/// order of a cold open is `testWatchStreamsLifecycleEvents`'s.
final class EarlyStartTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--max-workers", "1"] }

    /// An open whose session cannot be stored leaves no process behind and gives its slot back:
    /// with one slot, the next open still starts. Before `abandonEarlyStart` was called on this
    /// path, the process started for the session ran on, unbound, and held the only slot.
    func testAnOpenWhoseSessionCannotBeStoredLeavesNoProcessAndFreesItsSlot() throws {
        let database = harness.stateDirectory + "/state.sqlite"
        let refuse = harness.run("/usr/bin/sqlite3", [database,
            "CREATE TRIGGER refuse_sessions BEFORE INSERT ON session BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;"])
        XCTAssertEqual(refuse.code, 0, refuse.stderr)

        let refusal = try harness.refusal("open", "notes", "--activity", "notes.edit", "--info", "noteID=unstored")
        XCTAssertTrue(refusal.message.contains("create a session of 'notes'"), refusal.message)
        XCTAssertEqual(try harness.jsonList("sessions").count, 0, "nothing was kept")
        try harness.eventually("the process started for the session is gone") { sessionWorkers().isEmpty }

        let allow = harness.run("/usr/bin/sqlite3", [database, "DROP TRIGGER refuse_sessions;"])
        XCTAssertEqual(allow.code, 0, allow.stderr)
        let note = try harness.openNote("stored")
        XCTAssertEqual(try harness.state(note), "foregroundActive")
        XCTAssertEqual(sessionWorkers().count, 1)
    }

    /// Live children of the broker started for a session: the spawner sets
    /// `WINDOWBROKER_SESSION` for them only (a zygote and a prewarmed process have none).
    private func sessionWorkers() -> [Int32] {
        harness.children().filter { $0.state != "Z" }.map(\.pid).filter { pid in
            let environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
            return String(decoding: environ, as: UTF8.self).split(separator: "\0").contains { $0.hasPrefix("WINDOWBROKER_SESSION=") }
        }
    }
}
