import Foundation
import XCTest

/// The system UI (issue 21) on a headless sway of the test's own: the switcher the broker
/// starts on the compositor shows one card per session with its picture, the keys and the
/// pointer choose, open and close sessions through it; the command overlay lists the key
/// scene's commands and performs the one clicked.
final class SystemUITests: WindowTestCase {
    private let (background, card, selection) = SwitcherColours.all

    func testTheSwitcherShowsACardPerSessionAndReturnBringsAReclaimedOneBack() throws {
        let packing = try harness.openNote("packing", title: "Packing")
        try harness.type(packing, "socks, tent")
        _ = try harness.json("background", packing)
        _ = try harness.json("reclaim", packing)
        XCTAssertEqual(try harness.state(packing), "unattached")
        let shopping = try harness.openNote("shopping", title: "Shopping")
        let letter = try harness.openNote("letter", title: "Letter")
        try harness.eventually("two windows") { try sway.windows().count == 2 }
        let before = try sway.screenshot()

        let (pid, items) = try showSystemUI("switcher")
        XCTAssertGreaterThan(pid, 0)
        // Most recent first; the key scene (letter) first of all.
        XCTAssertEqual(items.map(\.id), [letter, shopping, packing])
        let shot = try sway.screenshot()
        XCTAssertNotEqual(shot, before, "the switcher is on screen")
        // Each card is painted where the switcher says, on its background; the card after the
        // key scene is the one chosen first (outlined).
        var points: [(Int, Int)] = []
        for item in items {
            points.append((item.x + 20, item.y + item.height - 6))      // inside the card, below its text
            points.append((item.x - 3, item.y + item.height / 2))       // just left of it: outline or background
        }
        points.append((items[2].x + items[2].width + 14, items[2].y + items[2].height / 2))  // right of the last
        let seen = try colours(shot, at: points)
        XCTAssertEqual(seen, [card, background, card, selection, card, background, background], "cards at \(items)")

        // Right, then Return: the reclaimed note comes back, with its text.
        try sway.wtype("-k", "Right", "-k", "Return")
        try harness.eventually("the chosen session is active again") { try harness.state(packing) == "foregroundActive" }
        XCTAssertEqual(try harness.noteState(packing).text, "socks, tent")
        try harness.eventually("the switcher is gone") { !(try systemUIShown()) }
        try harness.eventually("its window is back") { try window(of: packing) != nil }
    }

    func testDeleteClosesTheChosenSessionAndItsPicture() throws {
        let draft = try harness.openNote("draft", title: "Draft")
        try harness.type(draft, "to be closed")
        _ = try harness.json("background", draft)
        let snapshot = harness.stateDirectory + "/snapshots/\(draft).png"
        XCTAssertTrue(FileManager.default.fileExists(atPath: snapshot), "a background scene leaves a picture")
        let kept = try harness.openNote("kept", title: "Kept")

        let (_, items) = try showSystemUI("switcher")
        XCTAssertEqual(items.map(\.id), [kept, draft])
        try sway.wtype("-k", "Delete")
        try harness.eventually("the session is gone") { !(try harness.jsonList("sessions").contains { $0["id"] as? String == draft }) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: snapshot), "a closed session's picture is in no file")
        XCTAssertEqual(try harness.state(kept), "foregroundActive", "the other session is untouched")
        // The switcher stays for the rest; Escape leaves it.
        try sway.wtype("-k", "Escape")
        try harness.eventually("Escape leaves the switcher") { !(try systemUIShown()) }
    }

    /// As on iPadOS, a card swiped up closes its session, and the switcher stays for the others.
    func testDraggingACardUpClosesItsSession() throws {
        let gone = try harness.openNote("swiped", title: "Swiped")
        let stays = try harness.openNote("stays", title: "Stays")
        let (_, items) = try showSystemUI("switcher")
        XCTAssertEqual(items.map(\.id), [stays, gone])
        let (x, y) = items[1].centre
        try sway.pointer("drag", x, y, x, String(Int(y)! - 160))
        try harness.eventually("the swiped session is gone") { !(try harness.jsonList("sessions").contains { $0["id"] as? String == gone }) }
        XCTAssertEqual(try harness.state(stays), "foregroundActive")
        XCTAssertTrue(try systemUIShown(), "the switcher stays for the sessions left")
    }

    func testShowAllWindowsOfAnAppOpensANewWindowFromItsCard() throws {
        let first = try harness.openNote("first", title: "First")
        _ = try harness.openNote("other", title: "Other app's", app: "notes-single")
        let (_, items) = try showSystemUI("switcher", "--app", "notes")
        XCTAssertEqual(items.map(\.id), [first, "new-window"], "one app's sessions and the new-window card")
        let (x, y) = items[1].centre
        try sway.pointer("click", x, y)
        try harness.eventually("a second notes session") { try harness.jsonList("sessions", "--app", "notes").count == 2 }
        try harness.eventually("the switcher is gone") { !(try systemUIShown()) }
    }

    func testTheShowAllWindowsShortcutShowsTheSwitcherForTheKeyScenesApp() throws {
        let note = try harness.openNote("keyed", title: "Keyed")
        let reply = try harness.json("key", "super+grave")
        XCTAssertEqual(reply["result"] as? String, "performed")
        XCTAssertEqual(reply["session"] as? String, note)
        XCTAssertTrue(try systemUIShown(), "Show All Windows put the switcher on screen")
        // What wmctl prints for them, as documented.
        try JSONSchemaTests.check("system-ui", ["overlay"], on: harness)
        try JSONSchemaTests.check("system-ui", ["switcher", "--app", "notes"], on: harness)
        try JSONSchemaTests.check("system-ui-hide", ["switcher", "--hide"], on: harness)
    }

    func testTheCommandOverlayListsTheKeySceneCommandsAndPerformsTheOneClicked() throws {
        let note = try harness.openNote("overlaid", title: "Overlaid")
        try harness.eventually("the window") { try window(of: note) != nil }
        let before = try sway.screenshot()
        let (_, items) = try showSystemUI("overlay")
        let listed = Set(try harness.jsonList("commands", "--overlay").compactMap { $0["id"] as? String })
        XCTAssertEqual(Set(items.map(\.id)), listed, "the overlay shows what `commands --overlay` lists")
        XCTAssertTrue(listed.contains("file.newWindow"))
        XCTAssertNotEqual(try sway.screenshot(), before, "the overlay is on screen")
        // It leaves the keyboard with the scene: a shortcut still reaches it.
        XCTAssertTrue(try sway.windows().first { $0.pid == Int32(try harness.session(note)["pid"] as? Int ?? 0) }?.focused ?? false)

        let newWindow = try XCTUnwrap(items.first { $0.id == "file.newWindow" })
        let (x, y) = newWindow.centre
        try sway.pointer("click", x, y)
        try harness.eventually("New Window was performed") { try harness.jsonList("sessions").count == 2 }
        try harness.eventually("the overlay is gone") { !(try systemUIShown()) }
    }

    /// The system UI processes the running broker started (the surface shown and the one kept
    /// ready): its children named windowbroker-ui.
    private func systemUIProcesses() -> Set<Int32> {
        Set(processTable().filter { entry in
            entry.parent == harness.brokerPID && entry.state != "Z"
                && (try? String(contentsOfFile: "/proc/\(entry.pid)/comm", encoding: .utf8))?.hasPrefix("windowbroker-ui") == true
        }.map(\.pid))
    }

    /// Whether a process still runs (a zombie waiting to be reaped has ended).
    private func runs(_ pid: Int32) -> Bool {
        processStat(pid).map { $0.state != "Z" } ?? false
    }

    /// A switcher on screen ends with its broker: when it stops, and when it is killed.
    func testTheSystemUIEndsWithTheBroker() throws {
        _ = try harness.openNote("carded", title: "Carded")
        var (shown, _) = try showSystemUI("switcher")
        var started: Set<Int32> = []
        try harness.eventually("a process is kept ready beside the one shown") {
            started = systemUIProcesses()
            return started.count == 2
        }
        XCTAssertTrue(started.contains(Int32(shown)))
        XCTAssertEqual(harness.stop(signal: SIGTERM), 0)
        try harness.eventually("the stopped broker's system UI is gone") { !started.contains(where: runs) }

        try harness.start()
        (shown, _) = try showSystemUI("switcher")
        try harness.eventually("shown and kept ready again") {
            started = systemUIProcesses()
            return started.count == 2
        }
        XCTAssertTrue(started.contains(Int32(shown)))
        _ = harness.stop(signal: SIGKILL)
        try harness.eventually("the killed broker's system UI died with it") { !started.contains(where: runs) }
    }

    /// Holding the command key alone over a scene shows the overlay; releasing it hides it.
    /// Ctrl is the command key here: wtype's keyboard has a keymap of its own that binds no
    /// real modifier to Super, so GTK (which reads the modifiers through the keymap) never sees
    /// it held; a real keyboard's keymap does.
    func testHoldingTheCommandKeyShowsTheOverlayUntilItIsReleased() throws {
        XCTAssertEqual(harness.stop(signal: SIGTERM), 0)
        harness.extraArguments += ["--command-key", "ctrl"]
        try harness.start()
        let note = try harness.openNote("held", title: "Held")
        try harness.eventually("the window has the keyboard") { try window(of: note)?.focused == true }
        _ = try sway.settledScreenshot(harness, "the window is drawn and settled")
        // wtype holds the command key for four seconds on a virtual keyboard.
        let hold = WaitableProcess()
        hold.executableURL = URL(fileURLWithPath: "/usr/bin/wtype")
        hold.arguments = ["-s", "300", "-M", "ctrl", "-s", "4000", "-m", "ctrl"]
        hold.environment = ["WAYLAND_DISPLAY": sway.waylandDisplay, "PATH": "/usr/bin:/bin"]
        try hold.run()
        defer { hold.terminateAndWait() }
        // Its panel is in the middle of the output, over the dimmed window. (The window itself
        // changes too: GTK draws it focused while the virtual keyboard is there.)
        try harness.eventually("the overlay appears while the key is held", timeout: 3.5) {
            try colours(try sway.screenshot(), at: [(640, 360)]) == ["f4f4f2"]
        }
        hold.waitUntilExit()
        try harness.eventually("releasing the key hides it") { try colours(try sway.screenshot(), at: [(640, 360)]) != ["f4f4f2"] }
        XCTAssertFalse(try systemUIShown())
    }
}

/// Without a display there is no system UI: a clear error, nothing started.
final class HeadlessSystemUITests: XCTestCase {
    func testTheSwitcherNeedsADisplay() throws {
        let harness = try BrokerHarness()
        defer { harness.tearDown() }
        harness.brokerEnvironment["WAYLAND_DISPLAY"] = nil
        try harness.start()
        _ = try harness.openNote("headless")
        let shown = harness.wmctl("switcher")
        XCTAssertNotEqual(shown.code, 0)
        XCTAssertTrue(shown.stderr.contains("needs a display"), shown.stderr)
        XCTAssertTrue(shown.stderr.contains("WAYLAND_DISPLAY"), shown.stderr)
        // Show All Windows still answers the app's sessions, as a list.
        let key = try harness.json("key", "super+grave")
        XCTAssertEqual(key["result"] as? String, "performed")
        XCTAssertEqual((key["value"] as? [Any])?.count, 1)
        XCTAssertEqual(try harness.json("switcher", "--hide")["hidden"] as? Bool, false)
    }
}

/// One switcher process is kept ready (started, its drawing library and fonts loaded): a
/// request names its surface to it, and the next one is started once the surface is up. One
/// that died is replaced, and a request meanwhile starts a process of its own. The broker here
/// closes control connections idle for 1 s: the waiting process connects only once asked.
final class SystemUIStandbyTests: WindowTestCase {
    override func prepare(_ harness: BrokerHarness) throws {
        harness.extraArguments += ["--control-idle-timeout", "1s"]
    }

    private func show(_ arguments: String...) throws -> (pid: Int, items: [String]) {
        let reply = try harness.json(arguments)
        return (reply["pid"] as? Int ?? 0, (reply["items"] as? [[String: Any]] ?? []).map { $0["id"] as? String ?? "" })
    }

    func testASwitcherProcessIsKeptReadyAndReplacedOnceUsed() throws {
        let note = try harness.openNote("ready", title: "Ready")
        func waiting() -> [Int32] {
            harness.children().filter { $0.state != "Z" }.map(\.pid).filter { pid in
                ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").contains("standby")
            }
        }
        var ready: [Int32] = []
        try harness.eventually("a switcher process waits") { ready = waiting(); return ready.count == 1 }
        // Longer than an idle control connection is kept: it connects once asked.
        Thread.sleep(forTimeInterval: 1.5)
        let (pid, items) = try showSystemUI("switcher")
        XCTAssertEqual(Int32(pid), ready[0], "the process that waited shows the switcher")
        XCTAssertEqual(items.map(\.id), [note])
        // (The one showing the switcher was started as `standby` too, and keeps that name.)
        var next: [Int32] = []
        try harness.eventually("the next one waits") { next = waiting().filter { $0 != ready[0] }; return next.count == 1 }

        kill(next[0], SIGKILL)
        let (own, ownItems) = try showSystemUI("switcher")
        XCTAssertGreaterThan(own, 0)
        XCTAssertNotEqual(Int32(own), next[0], "a process that died shows nothing")
        XCTAssertEqual(ownItems.map(\.id), [note])
        var last: [Int32] = []
        try harness.eventually("another one waits") {
            last = waiting().filter { ![ready[0], next[0], Int32(own)].contains($0) }
            return last.count == 1
        }
        // It ends with the broker.
        XCTAssertEqual(harness.stop(), 0)
        try harness.eventually("the waiting process ended with the broker") { !processExists(last[0]) }
    }

}
