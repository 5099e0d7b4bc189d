import Foundation
import XCTest

/// Crashes and restarts: the session stays, unattached, with its last committed restoration
/// activity, and activating it restores the scene.
final class RecoveryTests: BrokerTestCase {
    /// The workspace survives even a broker that dies without a stop (a power loss): the
    /// scenes on screen are recorded as they change. Headless it is put back only when asked
    /// (`--restore-workspace always`; `auto` means "when there is a display").
    func testTheWorkspaceComesBackAfterTheBrokerDiedTheKeySceneLast() throws {
        let a = try harness.openNote("one")
        let b = try harness.openNote("two")
        let c = try harness.openNote("three")  // a makes room for it: two fit on screen
        _ = try harness.json("activate", b)    // b is key now, c beside it
        try harness.eventually("b is the key scene") { try harness.session(b)["key"] as? Bool == true }
        harness.stop(signal: SIGKILL)  // its scenes die with it (PR_SET_PDEATHSIG)

        try harness.start()
        XCTAssertEqual(try harness.state(b), "unattached", "headless, auto puts nothing back")
        XCTAssertEqual(harness.stop(signal: SIGTERM), 0)

        harness.extraArguments += ["--restore-workspace", "always"]
        try harness.start()
        try harness.eventually("the two scenes that were on screen are back") {
            try harness.state(b) == "foregroundActive" && harness.state(c) == "foregroundActive"
        }
        try harness.eventually("the key scene last, so it has the keyboard") { try harness.session(b)["key"] as? Bool == true }
        XCTAssertEqual(try harness.state(a), "unattached", "a had left the screen")
        XCTAssertEqual(try harness.noteState(b).callbacks, ["didFinishLaunching", "willConnect", "restoreInteractionState", "willEnterForeground", "didBecomeActive"])
    }

    func testWorkerKilledWithSIGKILLLeavesSessionRestorable() throws {
        let session = try harness.openNote("crashy")
        try harness.type(session, "saved part")
        _ = try harness.json("send", session, "move-cursor", "--arg", "position=4")
        _ = try harness.json("background", session)  // committed here
        _ = try harness.json("activate", session)
        try harness.type(session, " later")  // acknowledged, so committed: the newest state
        let pid = try harness.noteState(session).pid

        kill(pid, SIGKILL)
        try harness.eventually("the session is unattached after the crash") { try harness.state(session) == "unattached" }
        let listed = try harness.session(session)
        XCTAssertEqual(listed["lastDisconnect"] as? String, "crashed(SIGKILL)")
        XCTAssertEqual(listed["hasRestoration"] as? Bool, true)

        _ = try harness.json("activate", session)
        let restored = try harness.noteState(session)
        XCTAssertEqual(restored.text, "save laterd part", "typed at the cursor (4) after the background")
        XCTAssertEqual(restored.cursor, 10, "the cursor of the newest committed state too")
        XCTAssertEqual(restored.callbacks, ["didFinishLaunching", "willConnect", "restoreInteractionState", "willEnterForeground", "didBecomeActive"])
    }

    func testWorkerCrashingItselfIsReportedAndOthersAreUntouched() throws {
        let victim = try harness.openNote("victim")
        let bystander = try harness.openNote("bystander")
        try harness.type(bystander, "still here")
        let bystanderPID = try harness.noteState(bystander).pid
        _ = harness.wmctl("send", victim, "crash")  // the reply may or may not arrive before the process dies
        try harness.eventually("the crashed scene is unattached") { try harness.state(victim) == "unattached" }
        XCTAssertEqual(try harness.session(victim)["lastDisconnect"] as? String, "crashed(SIGSEGV)")
        XCTAssertEqual(try harness.noteState(bystander).pid, bystanderPID)
        XCTAssertEqual(try harness.noteState(bystander).text, "still here")
        XCTAssertEqual(harness.wmctl("status").code, 0)
    }

    func testBrokerKilledWithSIGKILLThenRestartedRestoresEverySession() throws {
        let first = try harness.openNote("first")
        try harness.type(first, "one")
        _ = try harness.json("background", first)
        let second = try harness.openNote("second")
        try harness.type(second, "two")
        _ = try harness.json("background", second)
        let workerPIDs = [try harness.noteState(first).pid, try harness.noteState(second).pid]

        harness.stop(signal: SIGKILL)
        try harness.eventually("workers die with the broker (PR_SET_PDEATHSIG)") { workerPIDs.allSatisfy { !processExists($0) } }

        try harness.start()
        let sessions = try harness.jsonList("sessions")
        XCTAssertEqual(Set(sessions.compactMap { $0["id"] as? String }), [first, second])
        for session in sessions {
            XCTAssertEqual(session["state"] as? String, "unattached")
            XCTAssertEqual(session["hasRestoration"] as? Bool, true)
            XCTAssertEqual(session["lastDisconnect"] as? String, "brokerStopped")
        }
        _ = try harness.json("activate", first)
        XCTAssertEqual(try harness.noteState(first).text, "one")
        _ = try harness.json("activate", second)
        XCTAssertEqual(try harness.noteState(second).text, "two")
    }

    func testGracefulStopSnapshotsConnectedScenesAndExitsZero() throws {
        let session = try harness.openNote("graceful")
        try harness.type(session, "typed but never backgrounded")
        let pid = try harness.noteState(session).pid
        XCTAssertEqual(harness.stop(signal: SIGTERM), 0)
        XCTAssertFalse(processExists(pid), "the worker was stopped with the broker")

        try harness.start()
        XCTAssertEqual(try harness.session(session)["hasRestoration"] as? Bool, true)
        _ = try harness.json("activate", session)
        XCTAssertEqual(try harness.noteState(session).text, "typed but never backgrounded")
    }

    func testDiscardPendingAcrossBrokerRestart() throws {
        let old = try harness.openNote("old")
        _ = try harness.json("background", old)
        _ = try harness.json("reclaim", old)
        _ = try harness.json("close", old)
        harness.stop(signal: SIGKILL)
        try harness.start()
        let fresh = try harness.openNote("fresh")
        XCTAssertEqual(try harness.noteState(fresh).discarded, [old])
    }
}

/// Deadlines on worker calls: a scene that takes too long is stopped; its saved data is kept.
final class DeadlineTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--restoration-timeout", "1", "--worker-timeout", "1"] }

    func testRestorationWithinTheDeadlineMayExtend() throws {
        let session = try harness.openNote("slow-but-ok")
        try harness.type(session, "text")
        _ = try harness.json("send", session, "set-restore-delay", "--arg", "ms=300")
        _ = try harness.json("background", session)
        _ = try harness.json("reclaim", session)
        XCTAssertEqual(try harness.json("activate", session)["state"] as? String, "foregroundActive")
        XCTAssertEqual(try harness.noteState(session).text, "text")
        XCTAssertTrue(harness.brokerLog.contains("EVENT=restorationExtended"), "the extension reached the broker")
    }

    func testRestorationPastTheDeadlineFailsClearlyAndKeepsTheSavedState() throws {
        let session = try harness.openNote("too-slow")
        try harness.type(session, "keep me")
        _ = try harness.json("send", session, "set-restore-delay", "--arg", "ms=5000")
        _ = try harness.json("background", session)
        _ = try harness.json("reclaim", session)

        let refused = try harness.refusal("activate", session)
        XCTAssertEqual(refused.code, "timedOut")
        XCTAssertTrue(refused.message.contains("restoreInteractionState"), refused.message)
        let listed = try harness.session(session)
        XCTAssertEqual(listed["state"] as? String, "unattached")
        XCTAssertEqual(listed["lastDisconnect"] as? String, "timedOut")
        XCTAssertTrue(listed["pid"] is NSNull)
        let shown = try harness.json("show", session)
        let info = (shown["restorationActivity"] as? [String: Any])?["userInfo"] as? [String: Any]
        XCTAssertEqual(info?["text"] as? String, "keep me", "the saved restoration activity survives the failed activation")
    }

    func testSceneHangingOnSaveIsStoppedAndTheLastCommittedActivityKept() throws {
        let (session, pid) = try harness.noteThatHangsOnSave("hangs")
        let other = try harness.openNote("other")  // session goes foregroundInactive, still fine

        // A failed save is an error (exit 1) that says what happened and what was kept.
        let refused = try harness.refusal("background", session)
        XCTAssertEqual(refused.code, "timedOut")
        XCTAssertTrue(refused.message.contains("last committed restoration activity is kept"), refused.message)
        XCTAssertEqual(try harness.state(session), "unattached")
        XCTAssertFalse(processExists(pid))
        XCTAssertEqual(try harness.session(session)["lastDisconnect"] as? String, "timedOut")
        XCTAssertEqual(try harness.state(other), "foregroundActive", "nothing else is affected")

        _ = try harness.json("activate", session)
        XCTAssertEqual(try harness.noteState(session).text, "committed later", "the newest committed state")
    }
}
