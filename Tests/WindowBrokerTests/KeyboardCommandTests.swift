import Foundation
import XCTest

/// Keyboard commands and the main menu through the notes app's manifest commands and
/// responders, `wmctl menu`, `commands` and `key`.
final class KeyboardCommandTests: BrokerTestCase {
    private func key(_ shortcut: String, _ extra: String...) throws -> [String: Any] {
        try harness.json(["key", shortcut] + extra)
    }

    private func note(_ id: String, text: String? = nil) throws -> String {
        let session = try harness.json("open", "notes", "--title", id, "--info", "noteID=\(id)")["session"] as! String
        if let text { _ = try harness.json("send", session, "type", "--arg", "text=\(text)") }
        return session
    }

    private func menus(_ extra: String...) throws -> [[String: Any]] {
        try XCTUnwrap(try harness.json(["menu"] + extra)["menus"] as? [[String: Any]])
    }

    private func ids(_ menu: [String: Any]) -> [String] {
        (menu["children"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    func testTheMainMenuHasTheSystemMenusAndTheAppsInsertionsInPlace() throws {
        let top = try menus("--app", "notes")
        XCTAssertEqual(top.compactMap { $0["id"] as? String }, ["application", "file", "edit", "view", "bookmarks", "window", "help"],
                       "Bookmarks inserted after View")
        let byID = Dictionary(uniqueKeysWithValues: top.map { ($0["id"] as! String, $0) })
        XCTAssertEqual(ids(byID["file"]!), ["notes.newWindow", "file.newWindow", "file.closeWindow", "notes.pin"], "insertChild at start and at end")
        XCTAssertEqual(ids(byID["edit"]!).suffix(2), ["notes.uppercase", "notes.insertDate"], "insertSibling after a command")
        XCTAssertEqual(ids(byID["bookmarks"]!), ["notes.addBookmark", "bookmarks.recent"], "a submenu")
        let recent = (byID["bookmarks"]!["children"] as! [[String: Any]])[1]
        let openRecent = (recent["children"] as! [[String: Any]])[0]
        XCTAssertEqual(openRecent["shortcut"] as? String, "ctrl+bracketleft")
        XCTAssertEqual(openRecent["allowsAutomaticMirroring"] as? Bool, false)
        XCTAssertEqual(try harness.jsonList("apps").first { $0["id"] as? String == "notes" }?["commandErrors"] as? [String], [])
    }

    /// What a command changed is the window's state like its text: pinned and the bookmarks
    /// added come back after a reclaim.
    func testWhatACommandChangedComesBackAfterAReclaim() throws {
        let session = try note("facts", text: "a note worth pinning")
        XCTAssertEqual(try harness.json("menu", "invoke", "notes.pin", "--session", session)["result"] as? String, "performed")
        for _ in 0..<2 { _ = try harness.json("menu", "invoke", "notes.addBookmark", "--session", session) }
        _ = try harness.json("background", session)
        _ = try harness.json("reclaim", session)
        _ = try harness.json("activate", session)
        let value = try XCTUnwrap(try harness.json("send", session, "note")["value"] as? [String: Any])
        XCTAssertEqual(value["pinned"] as? Bool, true)
        XCTAssertEqual(value["bookmarks"] as? Int, 2)
    }

    func testAShortcutGoesToTheActiveScenesResponderChainThenTheSystem() throws {
        let session = try note("chain", text: "hello")
        var reply = try key("ctrl+u")
        XCTAssertEqual(reply["command"] as? String, "notes.uppercase")
        XCTAssertEqual(reply["handledBy"] as? String, "scene")
        XCTAssertEqual(reply["result"] as? String, "performed")
        XCTAssertEqual(reply["session"] as? String, session)
        XCTAssertEqual(try harness.noteState(session).text, "HELLO")

        // Element first: a focused row copies itself; the scene copies the note otherwise.
        XCTAssertEqual(try key("ctrl+c")["value"] as? String, "HELLO")
        _ = try harness.json("send", session, "focus", "--arg", "path=list/row3")
        reply = try key("ctrl+c")
        XCTAssertEqual(reply["handledBy"] as? String, "element")
        XCTAssertEqual(reply["element"] as? String, "list/row3")
        XCTAssertEqual(reply["value"] as? String, "copied row3")
        // A command the row cannot perform passes it on to the scene.
        XCTAssertEqual(try key("ctrl+a")["handledBy"] as? String, "scene")

        // App level: New Note Window opens a scene through the activation API.
        reply = try key("ctrl+shift+n")
        XCTAssertEqual(reply["handledBy"] as? String, "app")
        let opened = try XCTUnwrap(reply["value"] as? String)
        XCTAssertEqual(try harness.state(opened), "foregroundActive")

        // Nobody performs undo: unhandled; a shortcut no command has: unhandled, no command.
        reply = try key("ctrl+z")
        XCTAssertEqual(reply["result"] as? String, "unhandled")
        XCTAssertEqual(reply["command"] as? String, "edit.undo")
        XCTAssertNil(reply["handledBy"] as? String)
        reply = try key("ctrl+q", "--session", session)
        XCTAssertEqual(reply["result"] as? String, "unhandled")
        XCTAssertNil(reply["command"] as? String)
        XCTAssertEqual(try harness.refusal("key", "ctrl+bogus+u").code, "invalidRequest")
        XCTAssertEqual(try harness.refusal("key", "u").code, "invalidRequest", "a plain key would steal typing")
    }

    func testSystemCommandsCloseAndCycleWindows() throws {
        let first = try note("one")
        let second = try note("two")
        let third = try note("three")
        XCTAssertEqual(try harness.state(third), "foregroundActive")
        var reply = try key("alt+grave")
        XCTAssertEqual(reply["handledBy"] as? String, "system")
        XCTAssertEqual(reply["value"] as? String, first, "next after the last wraps to the first")
        XCTAssertEqual(try harness.state(first), "foregroundActive")
        reply = try key("alt+shift+grave")
        XCTAssertEqual(reply["value"] as? String, third, "previous from the first is the last")
        let switcher = try XCTUnwrap(try key("super+grave")["value"] as? [[String: Any]])
        XCTAssertEqual(Set(switcher.compactMap { $0["session"] as? String }), [first, second, third])

        // Close Window discards the active scene's session.
        reply = try key("ctrl+w")
        XCTAssertEqual(reply["handledBy"] as? String, "system")
        XCTAssertEqual(reply["value"] as? String, third)
        XCTAssertEqual(try harness.refusal("show", third).code, "sessionDiscarded")
    }

    func testValidationRetitlesAndCanPerformHidesAndRefuses() throws {
        let session = try note("validate")
        // An empty note: Uppercase cannot be performed: unavailable in the menu, not in the overlay, refused.
        var commands = try harness.jsonList("commands")
        let uppercase = try XCTUnwrap(commands.first { $0["id"] as? String == "notes.uppercase" })
        XCTAssertEqual(uppercase["enabled"] as? Bool, false)
        XCTAssertFalse(try harness.jsonList("commands", "--overlay").contains { $0["id"] as? String == "notes.uppercase" })
        XCTAssertEqual(try key("ctrl+u")["result"] as? String, "unhandled")

        XCTAssertEqual(commands.first { $0["id"] as? String == "notes.pin" }?["title"] as? String, "Pin Note")
        _ = try key("ctrl+shift+p")
        commands = try harness.jsonList("commands", "--session", session)
        let pin = try XCTUnwrap(commands.first { $0["id"] as? String == "notes.pin" })
        XCTAssertEqual(pin["title"] as? String, "Unpin Note", "validate changed the title")
        XCTAssertEqual(pin["state"] as? String, "on")
        XCTAssertEqual(pin["handler"] as? String, "scene")
    }

    func testTheOverlayShowsWhatCanBePressedNow() throws {
        _ = try note("overlay", text: "x")
        let overlay = try harness.jsonList("commands", "--overlay")
        let ids = overlay.compactMap { $0["id"] as? String }
        XCTAssertTrue(ids.contains("notes.uppercase"))
        XCTAssertFalse(ids.contains("notes.insertDate"), "keyless commands are left out")
        XCTAssertFalse(ids.contains("notes.dumpState"), "hidden commands are left out")
        XCTAssertFalse(ids.contains("edit.undo"), "nobody performs undo here")
        XCTAssertFalse(ids.contains("notes.openRecent"), "no bookmark yet: cannot be performed")
        XCTAssertTrue(ids.contains("file.closeWindow"), "the system performs it")
        XCTAssertEqual(overlay.first { $0["id"] as? String == "notes.uppercase" }?["title"] as? String, "Uppercase the Note",
                       "the discoverability title")
        XCTAssertTrue(overlay.allSatisfy { $0["shortcut"] is String })
        // The keyless command is in the menu all the same.
        XCTAssertTrue(try harness.jsonList("commands").contains { $0["id"] as? String == "notes.insertDate" })
    }

    func testAShortcutWhileNoSceneIsActiveGoesNowhere() throws {
        let session = try note("idle")
        _ = try harness.json("background", session)
        let reply = try key("ctrl+u")
        XCTAssertEqual(reply["result"] as? String, "unhandled")
        XCTAssertNil(reply["session"] as? String)
        XCTAssertTrue((reply["detail"] as? String ?? "").contains("no scene is the key scene"))
        XCTAssertEqual(try harness.refusal("menu").code, "invalidState", "no scene and no app: say which")
    }

    func testDuplicateIdsAndShortcutsAreReportedAndTheRestLoads() throws {
        try harness.installNotes(as: "clash", [
            "menus": [["id": "extras", "title": "Extras", "insertSibling": ["menu": "help", "position": "before"]]],
            "commands": [
                ["id": "clash.fine", "title": "Fine", "input": "k", "modifiers": ["ctrl"], "insertChild": ["menu": "extras"]],
                ["id": "edit.copy", "title": "My Copy", "insertChild": ["menu": "extras"]],
                ["id": "clash.copy", "title": "Steals Copy", "input": "c", "modifiers": ["ctrl"], "insertChild": ["menu": "extras"]],
                ["id": "clash.twice", "title": "Twice", "input": "k", "modifiers": ["ctrl"], "insertChild": ["menu": "extras"]],
                ["id": "clash.nowhere", "title": "Nowhere", "insertChild": ["menu": "no-such-menu"]],
                ["id": "clash.badkey", "title": "Bad Key", "input": "k", "modifiers": ["hyper"]],
            ],
        ])
        let app = try XCTUnwrap(try harness.jsonList("apps").first { $0["id"] as? String == "clash" })
        let errors = try XCTUnwrap(app["commandErrors"] as? [String])
        XCTAssertEqual(errors.count, 5, "\(errors)")
        XCTAssertTrue(errors.contains { $0.contains("'edit.copy'") && $0.contains("already used by the command 'edit.copy' (Copy)") }, "\(errors)")
        XCTAssertTrue(errors.contains { $0.contains("'clash.copy'") && $0.contains("ctrl+c") && $0.contains("system command 'edit.copy'") }, "\(errors)")
        XCTAssertTrue(errors.contains { $0.contains("'clash.twice'") && $0.contains("'clash.fine'") }, "\(errors)")
        XCTAssertTrue(errors.contains { $0.contains("no-such-menu") })
        XCTAssertTrue(errors.contains { $0.contains("hyper") })
        XCTAssertTrue(errors.allSatisfy { $0.contains("clash.json") }, "each names its file")
        let extras = try XCTUnwrap(try menus("--app", "clash").first { $0["id"] as? String == "extras" })
        XCTAssertEqual(ids(extras), ["clash.fine"], "the rest of the menu loaded")
        XCTAssertTrue(harness.brokerLog.contains("clash.copy"), "reported in the log too")
    }

    func testWatchShowsCommandPerformed() throws {
        _ = try note("watched", text: "a")
        let watch = try harness.startWatch(["--event", "commandPerformed"])
        defer { watch.stop() }
        _ = try key("ctrl+u")
        try harness.eventually("watch shows the command") {
            watch.jsonLines.contains { ($0["detail"] as? String ?? "").hasPrefix("notes.uppercase (ctrl+u) performed by scene") }
        }
    }

    func testAppsChangeTheirMenuAtRuntimeUnderTheSameRules() throws {
        let first = try note("runtime")
        // AppDelegate.buildMenu ran in the scene's process and reached the broker before willConnect returned.
        var view = try XCTUnwrap(try menus().first { $0["id"] as? String == "view" })
        XCTAssertEqual(ids(view).filter { $0 == "notes.wordCount" }.count, 1)
        _ = try note("another process, the same menu")
        view = try XCTUnwrap(try menus().first { $0["id"] as? String == "view" })
        XCTAssertEqual(ids(view).filter { $0 == "notes.wordCount" }.count, 1, "identical insertions from another process are one")
        XCTAssertEqual(try key("ctrl+shift+w")["handledBy"] as? String, "app")

        func add(_ arguments: String...) throws -> [String: Any] {
            try harness.json(["send", first, "add-command"] + arguments.flatMap { ["--arg", $0] })
        }
        var reply = try add("id=edit.copy", "menu=view")
        XCTAssertEqual(reply["result"] as? String, "declined")
        XCTAssertTrue((reply["reason"] as? String ?? "").contains("already used by the command 'edit.copy'"), "\(reply)")
        reply = try add("id=notes.shout", "menu=view", "shortcut=ctrl+u")
        XCTAssertTrue((reply["reason"] as? String ?? "").contains("'notes.uppercase'"), "the app's own shortcut: \(reply)")
        reply = try add("id=notes.copyAll", "menu=edit", "shortcut=ctrl+c")
        XCTAssertTrue((reply["reason"] as? String ?? "").contains("system command 'edit.copy'"), "a system shortcut: \(reply)")
        XCTAssertEqual(try add("id=notes.jump", "menu=view", "shortcut=ctrl+alt+j", "after=notes.toggleToolbar")["result"] as? String, "performed")
        view = try XCTUnwrap(try menus().first { $0["id"] as? String == "view" })
        XCTAssertEqual(Array(ids(view).prefix(2)), ["notes.toggleToolbar", "notes.jump"], "insertSibling after")
        XCTAssertEqual(try key("ctrl+alt+j")["command"] as? String, "notes.jump")
        XCTAssertEqual(try harness.json("send", first, "remove-command", "--arg", "id=notes.jump")["result"] as? String, "performed")
        XCTAssertNil(try key("ctrl+alt+j")["command"] as? String)
        XCTAssertEqual(try harness.json("send", first, "remove-command", "--arg", "id=edit.copy")["result"] as? String, "declined",
                       "the system's commands stay")
    }

    /// Issue 21: `wmctl menu invoke` performs any command of the menu through the same
    /// dispatch as a key, keyless ones too (notes' Insert Date has no shortcut).
    func testAMenuCommandIsInvokedByItsIdKeylessOnesToo() throws {
        let note = try harness.openNote("dated")
        XCTAssertEqual(try harness.noteState(note).text, "")
        let reply = try harness.json("menu", "invoke", "notes.insertDate")
        XCTAssertEqual(reply["result"] as? String, "performed", "\(reply)")
        XCTAssertEqual(reply["command"] as? String, "notes.insertDate")
        XCTAssertEqual(reply["session"] as? String, note, "the key scene")
        XCTAssertTrue(reply["shortcut"] is NSNull)
        XCTAssertFalse(try harness.noteState(note).text.isEmpty, "the date went in")
        let missing = harness.wmctl("menu", "invoke", "notes.nosuch")
        XCTAssertEqual(missing.code, 1)
        XCTAssertTrue(missing.stdout.contains("has no command 'notes.nosuch'"), missing.stdout)
        XCTAssertEqual(harness.wmctl("menu").code, 0, "menu alone still shows the menu")
    }
}

