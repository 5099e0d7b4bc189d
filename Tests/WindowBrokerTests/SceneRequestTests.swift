import Foundation
import XCTest

/// Scenes asking for scenes through the SDK (requestSceneSessionActivation, -Destruction,
/// -Refresh), driven through the notes app's actions: placement by presentation style, the
/// prominent scene's modality, own-app permission, discards delivered once, no deadlock.
final class SceneRequestTests: BrokerTestCase {
    /// `wmctl send S ACTION --arg K=V...`: the action's value, or a failure with the decline reason.
    private func ask(_ session: String, _ action: String, _ arguments: String...) throws -> [String: Any] {
        try harness.json(["send", session, action] + arguments.flatMap { ["--arg", $0] })
    }

    private func value(_ reply: [String: Any]) throws -> [String: Any] {
        guard reply["result"] as? String == "performed", let value = reply["value"] as? [String: Any] else {
            throw HarnessError("the action was not performed: \(reply)")
        }
        return value
    }

    private func states() throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: try harness.jsonList("sessions").map { ($0["id"] as! String, $0["state"] as! String) })
    }

    func testASceneOpensANoteBesideItselfAndReusesItLater() throws {
        let other = try harness.openNote("other")
        let requester = try harness.openNote("list")
        let opened = try value(try ask(requester, "open-in-window", "noteID=details"))
        let details = try XCTUnwrap(opened["session"] as? String)
        XCTAssertEqual(opened["created"] as? Bool, true)
        XCTAssertEqual(opened["presentation"] as? String, "standard")
        XCTAssertEqual(opened["state"] as? String, "foregroundActive")

        let now = try states()
        XCTAssertEqual(now[requester], "foregroundActive", "the requester stays visible and active beside the new scene")
        XCTAssertEqual(now[other], "background", "the third foreground scene made room")
        XCTAssertEqual(try harness.session(details)["requestedBy"] as? String, requester)
        XCTAssertEqual(try harness.noteState(details).callbacks, ["didFinishLaunching", "willConnect", "willEnterForeground", "didBecomeActive"])
        XCTAssertEqual(try harness.noteState(requester).callbacks.last, "didBecomeActive")
        try harness.eventually("the keyboard moved to the new scene") {
            try harness.noteState(requester).keyChanges.last == "didResignKey" && harness.noteState(details).isKey
        }

        // The same note again: the scene that prefers it is brought forward, not a new one.
        let again = try value(try ask(requester, "open-in-window", "noteID=details"))
        XCTAssertEqual(again["session"] as? String, details)
        XCTAssertEqual(again["created"] as? Bool, false)
        XCTAssertEqual(try harness.jsonList("sessions").count, 3)
        XCTAssertEqual(try harness.noteState(details).continued, ["notes.edit"])
    }

    func testAProminentSceneIsModalUntilDismissed() throws {
        let beside = try harness.openNote("beside")
        let requester = try harness.openNote("main")
        let before = try states()
        let reply = try value(try ask(requester, "open-in-window", "noteID=sheet", "presentation=prominent"))
        let sheet = try XCTUnwrap(reply["session"] as? String)
        XCTAssertEqual(reply["presentation"] as? String, "prominent")

        var now = try states()
        XCTAssertEqual(now[sheet], "foregroundActive")
        XCTAssertEqual(now[requester], "foregroundInactive", "dimmed behind the prominent scene")
        XCTAssertEqual(now[beside], "foregroundInactive", "still in the foreground, dimmed")
        XCTAssertEqual(try harness.session(sheet)["presentation"] as? String, "prominent")
        XCTAssertEqual(try harness.json("send", sheet, "state")["value"].flatMap { ($0 as? [String: Any])?["isProminent"] as? Bool }, true,
                       "the scene is told it is presented prominently")
        XCTAssertEqual(try harness.json("send", requester, "state")["value"].flatMap { ($0 as? [String: Any])?["isProminent"] as? Bool }, false)

        let refused = try harness.refusal("activate", beside)
        XCTAssertEqual(refused.code, "requestDenied")
        XCTAssertTrue(refused.message.contains(sheet), refused.message)
        XCTAssertEqual(try harness.refusal("open", "notes", "--new").code, "requestDenied")
        let fromScene = try ask(beside, "open-in-window", "noteID=elsewhere")
        XCTAssertTrue((fromScene["reason"] as? String ?? "").hasPrefix("requestDenied"), "\(fromScene)")
        XCTAssertEqual(try states(), now, "refused requests change nothing")

        // Dismissed (sent to the background): everything is as it was before it came up, and
        // the scene that was key before it is key again.
        let watch = try harness.startWatch(["--event", "willResignActive", "--event", "didBecomeActive", "--event", "didBecomeKey"])
        defer { watch.stop() }
        XCTAssertEqual(try harness.json("background", sheet)["state"] as? String, "background")
        try harness.eventually("the callbacks are seen") { watch.jsonLines.count >= 4 }
        XCTAssertEqual(Set(watch.jsonLines.map { "\($0["session"] as? String ?? "") \($0["event"] as? String ?? "")" }),
                       ["\(sheet) willResignActive", "\(requester) didBecomeActive", "\(beside) didBecomeActive", "\(requester) didBecomeKey"])
        now = try states()
        XCTAssertEqual(now[requester], before[requester])
        XCTAssertEqual(now[beside], before[beside])
        XCTAssertEqual(try harness.json("activate", beside)["state"] as? String, "foregroundActive")
    }

    func testAutomaticIsProminentOnlyWhenTheSplitIsFull() throws {
        let requester = try harness.openNote("alone")
        let first = try value(try ask(requester, "open-in-window", "noteID=one", "presentation=automatic"))
        XCTAssertEqual(first["presentation"] as? String, "standard", "room beside the requester")
        // Requester and "one" fill the split now.
        let second = try value(try ask(requester, "open-in-window", "noteID=two", "presentation=automatic"))
        XCTAssertEqual(second["presentation"] as? String, "prominent", "no room: presented over the split")
        let now = try states()
        XCTAssertEqual(now[requester], "foregroundInactive")
        XCTAssertEqual(now[first["session"] as! String], "foregroundInactive")
    }

    func testDoneClosesTheSceneItselfAndTheDiscardIsDeliveredOnce() throws {
        let keeper = try harness.openNote("keeper")
        let done = try harness.openNote("done")
        try harness.type(done, "scratch")
        let draft = harness.notesDataDirectory + "/drafts/\(done).txt"
        XCTAssertTrue(FileManager.default.fileExists(atPath: draft))
        let watch = try harness.startWatch(["--event", "destructionRequested", "--event", "discarded"])
        defer { watch.stop() }

        _ = try ask(done, "dismiss")
        try harness.eventually("the session is discarded") { try !harness.jsonList("sessions").contains { $0["id"] as? String == done } }
        XCTAssertFalse(FileManager.default.fileExists(atPath: draft), "its own process deleted the draft")
        XCTAssertEqual(try harness.noteState(keeper).discarded, [], "the other scene of the app was not told a second time")
        try harness.eventually("both events are seen: \(watch.output)") { watch.jsonLines.count >= 2 }
        let events = watch.jsonLines
        XCTAssertEqual(events.map { $0["event"] as? String }, ["destructionRequested", "discarded"])
        XCTAssertEqual(events.first?["session"] as? String, done, "the requesting scene")
    }

    func testAnUnattachedSessionsDiscardGoesToExactlyOneRunningProcess() throws {
        let gone = try harness.openNote("gone")
        _ = try harness.json("background", gone)
        _ = try harness.json("reclaim", gone)
        let one = try harness.openNote("one")
        let two = try harness.openNote("two")
        _ = try harness.json("close", gone)
        let told = try [one, two].map { try harness.noteState($0).discarded }
        XCTAssertEqual(told.filter { $0 == [gone] }.count, 1, "\(told)")
        XCTAssertEqual(told.filter(\.isEmpty).count, 1, "\(told)")
    }

    func testRefreshTakesAFreshTitleFromTheOtherScene() throws {
        let list = try harness.openNote("groceries", title: "Untitled")
        try harness.type(list, "Groceries\nmilk, eggs")
        XCTAssertEqual(try harness.session(list)["title"] as? String, "Untitled")
        let asker = try harness.openNote("asker")
        let reply = try ask(asker, "refresh", "session=\(list)")
        XCTAssertEqual(reply["result"] as? String, "performed", "\(reply)")
        XCTAssertEqual(try harness.session(list)["title"] as? String, "Groceries")
        XCTAssertTrue(try harness.noteState(list).callbacks.contains("refresh"))
        // wmctl can do the same.
        XCTAssertEqual(try harness.json("refresh", list)["state"] as? String, "foregroundActive")
    }

    func testAScenesRequestsStayInsideItsApp() throws {
        let single = try harness.openNote("solo", app: "notes-single")
        let note = try harness.openNote("mine")
        let count = try harness.jsonList("sessions").count
        let open = try ask(note, "open-other-app", "app=notes-single")
        XCTAssertEqual(open["result"] as? String, "declined")
        XCTAssertTrue((open["reason"] as? String ?? "").hasPrefix("permissionDenied"), "\(open)")
        // Another app's session is answered as one that does not exist (issue 24): a scene
        // cannot even learn that it does.
        let close = try ask(note, "close-session", "session=\(single)")
        let nowhere = UUID().uuidString.lowercased()
        let closeNowhere = try ask(note, "close-session", "session=\(nowhere)")
        XCTAssertEqual((close["reason"] as? String)?.replacingOccurrences(of: single, with: "X"),
                       (closeNowhere["reason"] as? String)?.replacingOccurrences(of: nowhere, with: "X"), "\(close) \(closeNowhere)")
        XCTAssertTrue((close["reason"] as? String ?? "").hasPrefix("unknownSession"), "\(close)")
        let refresh = try ask(note, "refresh", "session=\(single)")
        XCTAssertTrue((refresh["reason"] as? String ?? "").hasPrefix("unknownSession"), "\(refresh)")
        let activate = try ask(note, "activate-session", "session=\(single)")
        XCTAssertTrue((activate["reason"] as? String ?? "").hasPrefix("unknownSession"), "\(activate)")
        // Nor by a prefix: `InProcessBrokerTests.testAScenesPrefixMatchesOnlyItsOwnAppsSessions`
        // (the SDK takes only whole ids, so a scene's prefix comes from a raw client).
        XCTAssertEqual(try harness.jsonList("sessions").count, count, "nothing changed")
        XCTAssertEqual(try harness.state(single), "foregroundActive", "another app's scene beside it")
    }

    func testASingleSceneAppGetsItsOneSceneBackWithTheActivity() throws {
        let solo = try harness.openNote("solo", app: "notes-single")
        let reply = try value(try ask(solo, "open-in-window", "noteID=another"))
        XCTAssertEqual(reply["session"] as? String, solo)
        XCTAssertEqual(reply["created"] as? Bool, false)
        XCTAssertEqual(try harness.noteState(solo).continued, ["notes.edit"])
        XCTAssertEqual(try harness.jsonList("sessions").count, 1)
    }

    func testAnUndeclaredActivityFromASceneIsRefused() throws {
        let note = try harness.openNote("typed")
        let reply = try ask(note, "request-activation", "noteID=x", "activityType=mail.compose")
        XCTAssertTrue((reply["reason"] as? String ?? "").hasPrefix("undeclaredActivityType"), "\(reply)")
        XCTAssertEqual(try harness.jsonList("sessions").count, 1)
    }

    func testACurrentActivityOfAnUndeclaredTypeIsRefusedAndTheSceneIsTold() throws {
        let note = try harness.openNote("kept")
        let before = try XCTUnwrap(try harness.json("show", note)["currentActivity"] as? [String: Any])
        _ = try ask(note, "set-activity-type", "type=mail.compose")
        try harness.eventually("the scene hears of the refusal") {
            (try harness.json("send", note, "state")["value"] as? [String: Any])?["refusedUpdates"] as? [String] == ["undeclaredActivityType"]
        }
        let after = try XCTUnwrap(try harness.json("show", note)["currentActivity"] as? [String: Any])
        XCTAssertEqual(after["activityType"] as? String, "notes.edit")
        XCTAssertEqual(after["activityType"] as? String, before["activityType"] as? String, "the last good activity is kept")
    }

    func testAnActivationRequestedInsideWillConnectDoesNotDeadlock() throws {
        let watch = try harness.startWatch(["--event", "activationRequested"])
        defer { watch.stop() }
        let parent = try harness.json(["open", "notes", "--activity", "notes.edit", "--info", "noteID=parent", "--info", "openOnConnect=child"])
        let parentID = try XCTUnwrap(parent["session"] as? String)
        try harness.eventually("the child scene is up") { try harness.jsonList("sessions").count == 2 }
        let child = try XCTUnwrap(try harness.jsonList("sessions").first { $0["id"] as? String != parentID }?["id"] as? String)
        try harness.eventually("the child is active") { try harness.state(child) == "foregroundActive" }
        XCTAssertEqual(try harness.state(parentID), "foregroundActive", "it asked for the child: the child came up beside it")
        try harness.eventually("the child is the key scene") { try harness.session(child)["key"] as? Bool == true }
        try harness.eventually("the request was published") { !watch.jsonLines.isEmpty }
        XCTAssertEqual(watch.jsonLines.first?["session"] as? String, parentID)
    }

    func testTheConfigurationIsChosenOnceAndKeptAcrossReclaim() throws {
        try harness.installNotes(as: "notes-multi", ["configurations": [
            ["name": "Editor", "role": "windowApplication", "delegate": "NoteSceneDelegate"],
            ["name": "Viewer", "role": "windowApplication", "delegate": "NoteViewerDelegate"],
        ]])
        try harness.eventually("the app is installed") { try harness.jsonList("apps").contains { $0["id"] as? String == "notes-multi" } }
        let note = try harness.openNote("shown", app: "notes-multi", extra: ["--info", "configuration=Viewer"])
        var state = try harness.json("send", note, "state")["value"] as? [String: Any] ?? [:]
        XCTAssertEqual(state["configurationQuestions"] as? Int, 1)
        XCTAssertEqual(state["configuration"] as? String, "Viewer")
        XCTAssertEqual(state["delegateName"] as? String, "NoteSceneDelegate", "the broker's default configuration's delegate, before the scene chose")
        XCTAssertEqual(try harness.session(note)["configuration"] as? String, "Viewer")

        _ = try harness.json("background", note)
        _ = try harness.json("reclaim", note)
        _ = try harness.json("activate", note)
        state = try harness.json("send", note, "state")["value"] as? [String: Any] ?? [:]
        XCTAssertEqual(state["configurationQuestions"] as? Int, 0, "a reconnecting scene is not asked again")
        XCTAssertEqual(state["configuration"] as? String, "Viewer")
        XCTAssertEqual(state["delegateName"] as? String, "NoteViewerDelegate")
        XCTAssertEqual(try harness.session(note)["configuration"] as? String, "Viewer")
    }

    func testTheManifestsPrefersToActivatePicksTheConfigurationAndTheScene() throws {
        try harness.installNotes(as: "mail", ["configurations": [
            ["name": "Editor", "role": "windowApplication", "delegate": "NoteSceneDelegate"],
            ["name": "Inbox", "role": "windowApplication", "delegate": "InboxDelegate", "prefersToActivate": ["inbox-*"]],
        ]])
        try harness.eventually("the app is installed") { try harness.jsonList("apps").contains { $0["id"] as? String == "mail" } }
        let first = try harness.json(["open", "mail", "--activity", "notes.edit", "--target", "inbox-work", "--info", "noteID=inbox-work"])
        let inbox = try XCTUnwrap(first["session"] as? String)
        XCTAssertEqual(try harness.session(inbox)["configuration"] as? String, "Inbox")
        let second = try harness.json(["open", "mail", "--activity", "notes.edit", "--target", "inbox-home", "--info", "noteID=inbox-home"])
        XCTAssertEqual(second["session"] as? String, inbox, "the Inbox configuration prefers every inbox")
        XCTAssertEqual(second["created"] as? Bool, false)
        let other = try harness.json(["open", "mail", "--activity", "notes.edit", "--target", "note-1", "--info", "noteID=note-1"])
        XCTAssertEqual(try harness.session(other["session"] as! String)["configuration"] as? String, "Editor")
        let named = try harness.json(["open", "mail", "--new", "--configuration", "Inbox"])
        XCTAssertEqual(try harness.session(named["session"] as! String)["configuration"] as? String, "Inbox")
        XCTAssertEqual(try harness.refusal("open", "mail", "--new", "--configuration", "Outbox").code, "invalidRequest")
    }

    func testWmctlOpenWithASessionDeliversTheActivityToIt() throws {
        let note = try harness.openNote("target")
        _ = try harness.json("background", note)
        let reply = try harness.json(["open", "notes", "--session", note, "--activity", "notes.edit", "--info", "noteID=target"])
        XCTAssertEqual(reply["session"] as? String, note)
        XCTAssertEqual(reply["state"] as? String, "foregroundActive")
        XCTAssertEqual(try harness.noteState(note).continued, ["notes.edit"])
    }
}
