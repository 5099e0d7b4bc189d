import Foundation
import XCTest

/// A broker whose scenes are windows on a headless sway of the test's own; `swayConfiguration`
/// adds lines to sway's config (window rules, the output's size).
class WindowTestCase: XCTestCase {
    var sway: SwayHarness!
    /// The compositor the scenes are on when `onWeston`: a weston nested in the sway.
    var weston: WestonHarness?
    var harness: BrokerHarness!
    var swayConfiguration: [String] { [] }
    var onWeston: Bool { false }

    override func setUpWithError() throws {
        sway = try SwayHarness(configuration: swayConfiguration)
        if onWeston { weston = try WestonHarness(in: sway) }
        harness = try BrokerHarness()
        harness.brokerEnvironment["WAYLAND_DISPLAY"] = weston?.waylandDisplay ?? sway.waylandDisplay
        try Self.makeGtkDeterministic(harness)
        try prepare(harness)
        try harness.start()
    }

    /// GTK draws the same picture for the same state: the cairo renderer (no GPU here), and a
    /// text cursor that does not blink (a screenshot taken mid-blink would differ). On Wayland
    /// GTK takes its settings from GSettings (org.gnome.desktop.interface), over settings.ini:
    /// the scenes get GLib's keyfile backend with the test's own file.
    static func makeGtkDeterministic(_ harness: BrokerHarness) throws {
        let settings = harness.root + "/config/glib-2.0/settings"
        try FileManager.default.createDirectory(atPath: settings, withIntermediateDirectories: true)
        try "[org/gnome/desktop/interface]\ncursor-blink=false\nenable-animations=false\n"
            .write(toFile: settings + "/keyfile", atomically: true, encoding: .utf8)
        harness.brokerEnvironment["XDG_CONFIG_HOME"] = harness.root + "/config"
        harness.brokerEnvironment["GSETTINGS_BACKEND"] = "keyfile"
        harness.brokerEnvironment["GSK_RENDERER"] = "cairo"
    }

    /// What a test case changes before its broker starts.
    func prepare(_ harness: BrokerHarness) throws {}

    /// Opens a note, waits for its window's first frame and returns what its process mapped.
    func mapsOfDrawnNote(_ noteID: String) throws -> String {
        let note = try harness.openNote(noteID, title: noteID)
        try harness.eventually("the window is drawn") { try harness.noteState(note).sizes.count >= 1 }
        return try mappedFiles(of: try XCTUnwrap(harness.session(note)["pid"] as? Int))
    }

    override func tearDown() {
        harness?.tearDown()
        weston?.stop()
        sway?.stop()
    }

    /// What scripts/png-pixels.py prints for `arguments`.
    static func pngPixels(_ arguments: [String]) throws -> String {
        let script = BrokerHarness.repository.appendingPathComponent("scripts/png-pixels.py").path
        let run = try runToCompletion("/usr/bin/python3", [script] + arguments)
        guard run.code == 0 else { throw HarnessError("png-pixels \(arguments.joined(separator: " ")): \(run.output)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The colours of a PNG file at those points, as rrggbb.
    func colours(ofFile path: String, at points: [(Int, Int)]) throws -> [String] {
        try Self.pngPixels([path, "--at"] + points.flatMap { [String($0.0), String($0.1)] }).split(separator: " ").map(String.init)
    }

    /// The colours of a screenshot at those points, as rrggbb.
    func colours(_ screenshot: Data, at points: [(Int, Int)]) throws -> [String] {
        let path = harness.root + "/colours-\(UUID().uuidString.prefix(6)).png"
        try screenshot.write(to: URL(fileURLWithPath: path))
        return try colours(ofFile: path, at: points)
    }

    /// A window's own picture (with alpha) against a screenshot at the output's origin:
    /// opaque pixels whose colour differs, pixels not opaque (its rounded corners), and of the
    /// differing ones those within 8 pixels of a corner (`png-pixels.py --over`).
    func picture(_ path: String, over screenshot: String) throws -> (differ: Int, translucent: Int, inCorners: Int, said: String) {
        let said = try Self.pngPixels([path, "--over", screenshot, "0", "0"])
        let counts = said.split(separator: " ").compactMap { Int($0) }
        guard counts.count == 3 else { throw HarnessError("png-pixels --over said: \(said)") }
        return (counts[0], counts[1], counts[2], said)
    }

    /// The switcher's colours (system_surface.h), for reading its pixels.
    enum SwitcherColours {
        static let background = "1c1e23", card = "3a3d45", selection = "4f9cf9"
        static var all: (String, String, String) { (background, card, selection) }
    }

    /// An item of the system UI on screen (a switcher card, an overlay row), in its surface.
    struct SystemUIItem {
        var id: String
        var x, y, width, height: Int
        var centre: (String, String) { (String(x + width / 2), String(y + height / 2)) }
    }

    /// `wmctl --json ARGS` for switcher or overlay: the items on screen, in order.
    func showSystemUI(_ arguments: String...) throws -> (pid: Int, items: [SystemUIItem]) {
        let reply = try harness.json(arguments)
        let items = try (reply["items"] as? [[String: Any]] ?? []).map { item in
            let frame = try XCTUnwrap(item["frame"] as? [String: Int], "\(item) has no frame")
            return SystemUIItem(id: item["id"] as? String ?? "", x: frame["x"] ?? 0, y: frame["y"] ?? 0, width: frame["width"] ?? 0, height: frame["height"] ?? 0)
        }
        return (reply["pid"] as? Int ?? 0, items)
    }

    /// Whether a system UI surface is still shown (asking to hide one says, and hides it).
    func systemUIShown() throws -> Bool {
        try harness.json("switcher", "--hide")["hidden"] as? Bool ?? false
    }

    /// Waits until each session was saved and disconnected because its compositor went away.
    func waitUntilSavedForTheCompositor(_ sessions: [String]) throws {
        do {
            for session in sessions {
                try harness.eventually("\(session) was saved and disconnected", timeout: 15) {
                    let shown = try harness.session(session)
                    return shown["state"] as? String == "unattached" && shown["lastDisconnect"] as? String == "compositorLost"
                }
            }
        } catch {
            // Seen once in about twenty runs: what the broker did, for the next time.
            print(harness.brokerLog.split(separator: "\n").filter { !$0.contains("Gtk-WARNING") }.suffix(60).joined(separator: "\n"))
            throw error
        }
    }

    /// The window of a session's scene, found by the worker's pid.
    func window(of session: String) throws -> SwayHarness.Window? {
        let pid = try harness.session(session)["pid"] as? Int ?? -1
        return try sway.windows().first { $0.pid == Int32(pid) }
    }
}

/// Scenes are windows (issue 20): on a real compositor (a headless sway the test starts),
/// every scene in the foreground is an xdg_toplevel with the app's id, the scene's title and
/// the worker's pid; a scene in the background or reclaimed has no window; one that comes back
/// has its window back; focus, keys, closing, resizing and restarts as a user meets them.
final class WindowTests: WindowTestCase {

    func testWindowsMatchTheSessionsInTheForeground() throws {
        let packing = try harness.openNote("packing", title: "Packing list")
        let shopping = try harness.openNote("shopping", title: "買い物リスト")
        try harness.eventually("both windows are mapped") { try sway.windows().count == 2 }
        for session in [packing, shopping] {
            let listed = try harness.session(session)
            let window = try XCTUnwrap(try window(of: session), "no window for \(session)")
            XCTAssertEqual(window.appID, "notes")
            XCTAssertEqual(window.title, listed["title"] as? String)
            XCTAssertTrue(window.visible, "two tiled windows are both visible")
            XCTAssertEqual(listed["state"] as? String, "foregroundActive", "every visible scene is active")
        }

        // A title the scene sets is the window's title.
        _ = try harness.json("send", packing, "retitle", "--arg", "count=1")
        try harness.eventually("the window follows the title") { try window(of: packing)?.title == "title 0" }

        // Background: no window. Reclaimed: no process, no window. Back: the window again.
        _ = try harness.json("background", packing)
        try harness.eventually("a background scene has no window") { try sway.windows().count == 1 }
        _ = try harness.json("reclaim", packing)
        XCTAssertEqual(try sway.windows().map(\.pid), [Int32(try harness.session(shopping)["pid"] as? Int ?? 0)])
        _ = try harness.json("activate", packing)
        try harness.eventually("the restored scene has its window back") { try window(of: packing) != nil }
        XCTAssertEqual(try window(of: packing)?.title, "title 0")
    }

    /// The promise of the whole project, on screen: a window before reclaim equals, pixel for
    /// pixel, the window after reclaim and reactivation (same text, same cursor, same size).
    func testAReclaimedSceneComesBackDrawnExactlyAsItWas() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/grim") else { throw XCTSkip("grim is not installed") }
        let note = try harness.openNote("pixels", title: "Pixels")
        try harness.type(note, "the quick brown fox")
        _ = try harness.json("send", note, "move-cursor", "--arg", "position=4")
        // Focused first: GTK draws the text cursor only in the window the compositor activated.
        try harness.eventually("the window is drawn, with the keyboard") { try window(of: note)?.focused == true }
        let before = try sway.settledScreenshot(harness, "two screenshots agree (the frame is settled)")
        try harness.type(note, "X")
        try harness.eventually("typing changes the window") { try sway.screenshot() != before }
        _ = try harness.json("send", note, "set-text", "--arg", "text=the quick brown fox")
        _ = try harness.json("send", note, "move-cursor", "--arg", "position=4")
        try harness.eventually("the window is as before again") { try sway.screenshot() == before }

        _ = try harness.json("background", note)
        _ = try harness.json("reclaim", note)
        XCTAssertEqual(try harness.state(note), "unattached")
        XCTAssertNotEqual(try sway.screenshot(), before, "no window while reclaimed")
        _ = try harness.json("activate", note)
        try harness.eventually("the restored window equals the one before reclaim, pixel for pixel", timeout: 10) {
            try sway.screenshot() == before
        }
    }

    /// The compositor decides which window has the keyboard; the broker follows: the focused
    /// window's scene is the key scene in `sessions`, `show` and `watch`, typed text lands in it,
    /// and a shortcut from the real keyboard goes through the command dispatch.
    func testTheFocusedWindowIsTheKeySceneAndTypingGoesToIt() throws {
        let a = try harness.openNote("typed-a", title: "A")
        let b = try harness.openNote("typed-b", title: "B")
        try harness.eventually("both windows are mapped") { try sway.windows().count == 2 }
        let pidA = try XCTUnwrap(harness.session(a)["pid"] as? Int)

        let watch = try harness.startWatch(["--event", "didBecomeKey", "--event", "commandPerformed"])
        defer { watch.stop() }
        _ = try harness.subscribed(watch)
        try sway.swaymsg("[pid=\(pidA)] focus")
        try harness.eventually("the focused window's scene is the key scene") {
            try harness.session(a)["key"] as? Bool == true && harness.session(b)["key"] as? Bool == false
        }
        XCTAssertTrue(try harness.noteState(a).isKey)
        XCTAssertFalse(try harness.noteState(b).isKey)
        XCTAssertEqual(try harness.state(a), "foregroundActive")
        XCTAssertEqual(try harness.state(b), "foregroundActive", "the other window stays active, only the keyboard moved")
        try harness.eventually("watch shows who moved the key") {
            watch.jsonLines.contains { $0["session"] as? String == a && $0["event"] as? String == "didBecomeKey" && $0["detail"] as? String == "compositor" }
        }

        // Typing: text, Backspace, Return, an arrow.
        try sway.wtype("hello")
        try harness.eventually("the text reached the focused note") { try harness.noteState(a).text == "hello" }
        try sway.wtype("-k", "BackSpace", "-k", "Left", "X")
        try harness.eventually("Backspace and an arrow") { try harness.noteState(a).text == "helXl" }
        XCTAssertEqual(try harness.noteState(b).text, "", "the other window got nothing")

        // ctrl+u from the keyboard: Uppercase, performed by the scene through the command dispatch.
        try sway.wtype("-M", "ctrl", "u", "-m", "ctrl")
        try harness.eventually("ctrl+u uppercased the note") { try harness.noteState(a).text == "HELXL" }
        try harness.eventually("the command is in watch") {
            watch.jsonLines.contains { $0["session"] as? String == a && $0["event"] as? String == "commandPerformed"
                && ($0["detail"] as? String ?? "").hasPrefix("notes.uppercase (ctrl+u) performed by scene") }
        }
        // wmctl key goes to the same scene: the key scene.
        XCTAssertEqual(try harness.json("key", "ctrl+u")["session"] as? String, a)
    }

    /// No blank window while a scene restores: a reclaimed scene brought back shows the picture
    /// it left (its window, its pixels) for as long as its restore takes (here an extended one
    /// of 3 s), and then the live window, which equals it.
    func testARestoringSceneShowsThePictureItLeftUntilItIsRestored() throws {
        let note = try harness.openNote("held-picture", title: "Held picture")
        try harness.type(note, "what it looked like")
        try harness.eventually("the window") { try window(of: note) != nil }
        let live = try sway.settledScreenshot(harness, "the window is settled")
        _ = try harness.json("send", note, "set-restore-delay", "--arg", "ms=3000")
        _ = try harness.json("background", note)
        let snapPath = harness.root + "/left.png", shotPath = harness.root + "/restoring.png"
        XCTAssertEqual(harness.wmctl("show", note, "--snapshot", snapPath).code, 0)
        _ = try harness.json("reclaim", note)
        XCTAssertTrue(try sway.windows().isEmpty)

        let activate = try harness.start(wmctl: ["activate", note])  // answers once restored
        try harness.eventually("a window while it restores") { try window(of: note) != nil }
        XCTAssertNotEqual(try harness.state(note), "foregroundActive", "still restoring")
        try harness.eventually("it shows the picture the scene left", timeout: 2.5) {
            try sway.screenshot().write(to: URL(fileURLWithPath: shotPath))
            // Pixel for pixel but at the corners, which the window rounds off the picture again.
            let compared = try picture(snapPath, over: shotPath)
            return compared.differ == compared.inCorners
        }
        XCTAssertTrue(activate.isRunning, "shown before the restore was complete")
        XCTAssertEqual(activate.wait().code, 0)
        XCTAssertEqual(try harness.state(note), "foregroundActive")
        try harness.eventually("the live window equals it") { try sway.screenshot() == live }
    }

    /// Prominent presentation is real on screen: the scene asked for prominently is a sheet
    /// over its requester's window (its transient child across processes, xdg-foreign: sway
    /// floats it over it), with a Done button; the requester is dimmed and takes no typing
    /// while the sheet is up; Done dismisses the sheet and the requester is itself again.
    func testAProminentSceneIsASheetOverItsRequesterWhichIsDimmedUntilDone() throws {
        let requester = try harness.openNote("under", title: "Under")
        try harness.type(requester, "behind the sheet")
        try harness.eventually("the window") { try window(of: requester) != nil }
        let before = try sway.settledScreenshot(harness, "the window is settled")
        let reply = try harness.json("send", requester, "open-in-window", "--arg", "noteID=sheet", "--arg", "presentation=prominent")
        let sheet = try XCTUnwrap((reply["value"] as? [String: Any])?["session"] as? String)
        var placed: SwayHarness.Window?
        try harness.eventually("the sheet floats over its requester's window") {
            guard let under = try window(of: requester), let over = try window(of: sheet) else { return false }
            placed = over
            return over.floating && !under.floating && over.x > under.x && over.x + over.width < under.x + under.width
                && over.y >= under.y && over.y + over.height <= under.y + under.height
        }
        XCTAssertEqual(try harness.state(requester), "foregroundInactive")
        let text = { (shot: Data) in try self.colours(shot, at: (12...60).map { ($0, 68) }) }
        try harness.eventually("the requester is drawn dimmed") { try text(try sway.screenshot()) != text(before) }

        // Typed into the requester's window (focused by hand): nothing reaches it.
        let pid = try XCTUnwrap(harness.session(requester)["pid"] as? Int)
        try sway.swaymsg("[pid=\(pid)] focus")
        try sway.wtype("lost")
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(try harness.noteState(requester).text, "behind the sheet")

        // Done, at the start of the sheet's header bar.
        let done = try XCTUnwrap(placed)
        try sway.pointer("click", "\(done.x + 30)", "\(done.y + 23)")
        try harness.eventually("Done dismissed the sheet (its session with it)") {
            try !harness.jsonList("sessions").contains { $0["id"] as? String == sheet } && sway.windows().count == 1
        }
        try harness.eventually("the requester is active again") { try harness.state(requester) == "foregroundActive" }
        try harness.eventually("and drawn as before") { try text(try sway.screenshot()) == text(before) }
    }

    /// Interaction state comes back whole after a reclaim: the selection made with the keyboard,
    /// how far the text was scrolled, which widget had the focus, and so the same pixels.
    func testSelectionScrollAndFocusComeBackAfterAReclaim() throws {
        let note = try harness.openNote("long", title: "Long")
        let lines = (1...80).map { "line \($0)" }.joined(separator: "\n")
        _ = try harness.json("send", note, "set-text", "--arg", "text=\(lines)")
        let pid = try XCTUnwrap(harness.session(note)["pid"] as? Int)
        try sway.swaymsg("[pid=\(pid)] focus")
        try sway.wtype("-M", "ctrl", "-k", "End", "-m", "ctrl")
        try sway.wtype("-M", "shift", "-k", "Up", "-k", "Up", "-m", "shift")
        func view() throws -> (selection: [Int], scroll: Double, focused: Bool) {
            let value = try harness.json("send", note, "note")["value"] as? [String: Any] ?? [:]
            return (value["selection"] as? [Int] ?? [], value["scroll"] as? Double ?? -1, value["focused"] as? Bool ?? false)
        }
        try harness.eventually("two lines selected from the end, scrolled down") {
            let shown = try view()
            return shown.selection.count == 2 && shown.selection[1] == lines.count && shown.selection[0] < shown.selection[1] && shown.scroll > 0
        }
        let before = try view()
        XCTAssertTrue(before.focused, "the text has the focus")
        // Once the scrollbar GTK shows while the text scrolls has gone again.
        var screen = Data()
        try harness.eventually("the window is settled, its scroll indicator gone", timeout: 10) {
            screen = try sway.settledScreenshot(harness, "the window is settled")
            return try colours(screen, at: [(1277, 600)]) == ["ffffff"]
        }

        _ = try harness.json("background", note)
        _ = try harness.json("reclaim", note)
        _ = try harness.json("activate", note)
        try harness.eventually("the same selection, scroll and focus in the new process") {
            let after = try view()
            return after.selection == before.selection && after.scroll == before.scroll && after.focused
        }
        // GTK draws a selection grey once the keyboard that was there has left (wtype's comes
        // and goes with each run): the same history for the new window, with a key that changes nothing.
        try sway.wtype("-M", "shift", "-m", "shift")
        try harness.eventually("and the same pixels", timeout: 10) { try sway.screenshot() == screen }
    }

    /// Two windows of one note: an edit made by a menu command (Uppercase, from the keyboard)
    /// reaches the other window as typing does, in its model and in its editor.
    func testAnEditByACommandReachesTheNotesOtherWindow() throws {
        let a = try harness.openNote("shared", title: "A")
        let b = try harness.openNote("shared", title: "B", extra: ["--new"])
        XCTAssertNotEqual(a, b)
        try harness.eventually("both windows are mapped") { try sway.windows().count == 2 }
        try harness.type(a, "mixed Case")
        try harness.eventually("typing reached the other window") { try harness.noteState(b).text == "mixed Case" }
        let pidA = try XCTUnwrap(harness.session(a)["pid"] as? Int)
        try sway.swaymsg("[pid=\(pidA)] focus")
        try harness.eventually("a is the key scene") { try harness.session(a)["key"] as? Bool == true }
        try sway.wtype("-M", "ctrl", "u", "-m", "ctrl")
        try harness.eventually("Uppercase reached the other window's editor") {
            let note = try harness.json("send", b, "note")["value"] as? [String: Any]
            return note?["text"] as? String == "MIXED CASE" && note?["windowText"] as? String == "MIXED CASE"
        }
    }

    /// Closing a window is not discarding its session: the scene saves and disconnects, the
    /// session stays with its text, and `activate` brings the window back.
    func testClosingAWindowKeepsItsSession() throws {
        let note = try harness.openNote("closed", title: "Closed")
        try harness.eventually("the window is mapped") { try window(of: note) != nil }
        let pid = try XCTUnwrap(harness.session(note)["pid"] as? Int)
        try harness.type(note, "keep me")
        try sway.swaymsg("[pid=\(pid)] kill")
        try harness.eventually("the scene disconnected") { try harness.state(note) == "unattached" }
        XCTAssertTrue(try sway.windows().isEmpty)
        let listed = try harness.session(note)
        XCTAssertEqual(listed["lastDisconnect"] as? String, "closedByUser")
        XCTAssertEqual(listed["hasRestoration"] as? Bool, true, "its state was saved before it went")
        XCTAssertFalse(processExists(Int32(pid)), "the process ended")

        _ = try harness.json("activate", note)
        try harness.eventually("the window is back") { try window(of: note) != nil }
        XCTAssertEqual(try harness.noteState(note).text, "keep me")
        try harness.eventually("the reopened window is focused and key") { try harness.session(note)["key"] as? Bool == true }
    }

    /// A scene with a display draws with GTK 4 and never loads the system UI's drawing library.
    func testAWindowedSceneIsAGtkWindow() throws {
        let maps = try mapsOfDrawnNote("drawn")
        XCTAssertTrue(maps.contains("libgtk-4.so"), "GTK is not loaded:\n\(maps)")
        XCTAssertFalse(maps.contains("libwindowbroker-drawing.so"), "a scene loaded the system UI's drawing library")
    }

    /// A second tiled window halves the first: the scene is told its new size and redraws.
    func testATiledWindowIsToldItsNewSize() throws {
        let first = try harness.openNote("wide", title: "Wide")
        try harness.eventually("the window is drawn") { try harness.noteState(first).sizes.count >= 1 }
        let before = try harness.noteState(first).sizes.last
        _ = try harness.openNote("narrow", title: "Narrow")
        try harness.eventually("the first scene was told a new size") { try harness.noteState(first).sizes.last != before }
        let window = try XCTUnwrap(try window(of: first))
        XCTAssertEqual(try harness.noteState(first).sizes.last, "\(window.width)x\(window.height)", "the size the compositor gave the window")
    }

    /// A prewarmed scene connects to the compositor while it waits in its pool, and its window
    /// opens on that connection: with the compositor's socket moved away (new clients cannot
    /// reach it, connected ones can), the prewarmed scene still maps its window; a cold scene
    /// opened then cannot, and runs on without one.
    func testAPrewarmedSceneOpensItsWindowOnTheConnectionItMadeWhileItWaited() throws {
        try harness.installNotes(as: "warm", ["prewarm": 1])
        try harness.eventually("a prewarmed worker is ready") { try prewarmed("warm") == 1 }
        let socket = sway.waylandDisplay
        XCTAssertEqual(rename(socket, socket + ".aside"), 0, String(cString: strerror(errno)))
        defer { _ = rename(socket + ".aside", socket) }

        let warm = try openPrewarmed()
        try harness.eventually("the prewarmed scene's window is mapped") { try window(of: warm)?.appID == "warm" }
        try harness.eventually("and drawn") { try harness.noteState(warm).sizes.count >= 1 }

        let cold = try harness.openNote("cold", title: "Cold")
        XCTAssertEqual(try harness.state(cold), "foregroundActive", "a scene without a window runs on")
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertNil(try window(of: cold), "the socket was out of reach for a new connection")
    }

    /// A prewarmed scene whose compositor went away while it waited ends (GTK cannot outlive
    /// its display) and its pool is filled again by one connected to the compositor there is
    /// now, which opens the window.
    func testAPrewarmedSceneWhoseCompositorRestartedIsReplaced() throws {
        try harness.installNotes(as: "warm", ["prewarm": 1])
        try harness.eventually("a prewarmed worker is ready") { try prewarmed("warm") == 1 }
        let first = try prewarmedPIDs()
        try sway.restart()
        try harness.eventually("the pool was filled again", timeout: 15) {
            try prewarmed("warm") == 1 && !prewarmedPIDs().isEmpty && prewarmedPIDs() != first
        }
        let warm = try openPrewarmed()
        try harness.eventually("the window is mapped on the new compositor") { try window(of: warm)?.appID == "warm" }
        try harness.eventually("and drawn") { try harness.noteState(warm).sizes.count >= 1 }
    }

    /// The compositor goes away with two notes on screen and one in the background (66.2):
    /// each scene says its display broke, is saved and disconnected (`compositorLost`, in
    /// `watch` and `sessions`, not a crash), and the two that were on screen come back, with
    /// their windows, text and cursor and the same key scene, when a compositor is there again.
    func testScenesACompositorTookAwayComeBackWhenOneIsThereAgain() throws {
        let behind = try harness.openNote("behind", title: "Behind")
        _ = try harness.json("background", behind)
        let first = try harness.openNote("first", title: "First")
        let second = try harness.openNote("second", title: "Second")
        try harness.type(first, "typed before the loss")
        for note in [first, second] {
            try harness.eventually("the window is drawn") { try window(of: note) != nil && harness.noteState(note).sizes.count >= 1 }
        }
        _ = try harness.json("activate", first)
        try harness.eventually("first is the key scene") { try harness.session(first)["key"] as? Bool == true }
        let cursor = try harness.noteState(first).cursor
        let watch = try harness.startWatch(["--event", "exited", "--event", "crashed"])
        defer { watch.stop() }

        sway.goAway()
        try waitUntilSavedForTheCompositor([first, second, behind])
        try harness.eventually("watch said why for each") {
            watch.jsonLines.filter { $0["event"] as? String == "exited" && $0["detail"] as? String == "compositorLost" }.count == 3
        }
        XCTAssertFalse(watch.jsonLines.contains { $0["event"] as? String == "crashed" }, "\(watch.jsonLines)")
        Thread.sleep(forTimeInterval: 1)
        XCTAssertEqual(try harness.session(first)["state"] as? String, "unattached", "nothing comes back while no compositor answers")

        try sway.comeBack()
        for note in [first, second] {
            try harness.eventually("\(note) is on the new compositor", timeout: 20) {
                try harness.state(note) == "foregroundActive" && window(of: note) != nil
            }
        }
        XCTAssertEqual(try harness.state(behind), "unattached", "a scene that was in the background stays there")
        XCTAssertEqual(try harness.noteState(first).text, "typed before the loss")
        XCTAssertEqual(try harness.noteState(first).cursor, cursor)
        try harness.eventually("the key scene is the one that was") { try harness.session(first)["key"] as? Bool == true }
    }

    /// A compositor that comes back under another name (a second sway here, on a socket of its
    /// own): `wmctl display` names it, and the scene the first one took away comes back there,
    /// restored (66.2).
    func testAScenePutBackOnTheDisplayWmctlNames() throws {
        let note = try harness.openNote("moved", title: "Moved")
        try harness.type(note, "kept")
        try harness.eventually("its window is on the first sway") { try window(of: note) != nil }
        sway.goAway()
        try harness.eventually("saved as compositorLost", timeout: 15) { try harness.session(note)["lastDisconnect"] as? String == "compositorLost" }
        XCTAssertEqual(try harness.json("display")["waiting"] as? Int, 1)
        let other = try SwayHarness()
        defer { other.stop() }
        let shown = try harness.json("display", other.waylandDisplay)
        XCTAssertEqual(shown["path"] as? String, other.waylandDisplay)
        XCTAssertEqual(shown["answers"] as? Bool, true)
        try harness.eventually("back, on the other sway", timeout: 20) {
            let pid = try harness.session(note)["pid"] as? Int ?? -1
            return try harness.state(note) == "foregroundActive" && other.windows().contains { $0.pid == Int32(pid) }
        }
        XCTAssertEqual(try harness.noteState(note).text, "kept")
        XCTAssertEqual(try harness.json("display")["waiting"] as? Int, 0)
        XCTAssertEqual(try harness.refusal("display", String(repeating: "x", count: 150)).code, "invalidRequest", "no socket has so long a name")
        XCTAssertEqual(try harness.json("display")["path"] as? String, other.waylandDisplay, "a refused name changes nothing")
    }

    /// While the compositor is away the pool is not refilled (a worker started then could never
    /// open a window, and would be bound as a scene without one); once it is back it is.
    func testNoPrewarmedSceneIsStartedWhileTheCompositorIsAway() throws {
        try harness.installNotes(as: "warm", ["prewarm": 1])
        try harness.eventually("a prewarmed worker is ready") { try prewarmed("warm") == 1 }
        sway.goAway()
        try harness.eventually("the prewarmed worker ended with its compositor") { try prewarmedPIDs().isEmpty }
        Thread.sleep(forTimeInterval: 1.5)  // a refill would have started by now (it retries within 0.5 s)
        XCTAssertEqual(try prewarmed("warm"), 0, "nothing was started with no compositor to open a window on")
        try sway.comeBack()
        try harness.eventually("the pool is filled again", timeout: 15) { try prewarmed("warm") == 1 }
        let warm = try openPrewarmed()
        try harness.eventually("its window is mapped on the compositor") { try window(of: warm)?.appID == "warm" }
    }

    /// Opens a note of `warm` on its prewarmed worker; its session.
    private func openPrewarmed() throws -> String {
        let reply = try harness.json(["open", "warm", "--activity", "notes.edit", "--title", "Warm", "--info", "noteID=warm"])
        XCTAssertEqual(reply["launch"] as? String, "prewarmed")
        return try XCTUnwrap(reply["session"] as? String)
    }

    /// The broker's children that are no session's process: the prewarmed ones (and the
    /// system UI's, which these tests never start).
    private func prewarmedPIDs() throws -> Set<Int32> {
        let sessions = Set(try harness.jsonList("sessions").compactMap { ($0["pid"] as? Int).map(Int32.init) })
        return Set(harness.children().filter { $0.state != "Z" }.map(\.pid)).subtracting(sessions)
    }

    private func prewarmed(_ app: String) throws -> Int? {
        (try harness.json("status")["prewarmed"] as? [String: Any])?[app] as? Int
    }

    /// `wmctl activate` of a scene whose window is on screen but not focused: the window asks
    /// the compositor for the keyboard (xdg-activation) and gets it.
    func testActivatingAVisibleSceneFocusesItsWindow() throws {
        let a = try harness.openNote("first", title: "First")
        let b = try harness.openNote("second", title: "Second")
        try harness.eventually("both windows are mapped, the newer one focused") {
            try sway.windows().count == 2 && window(of: b)?.focused == true
        }
        try harness.eventually("b is the key scene") { try harness.session(b)["key"] as? Bool == true }
        _ = try harness.json("activate", a)
        try harness.eventually("the compositor focused a's window") { try window(of: a)?.focused == true }
        try harness.eventually("and the broker agrees") {
            try harness.session(a)["key"] as? Bool == true && harness.session(b)["key"] as? Bool == false
        }
        XCTAssertEqual(try harness.noteState(b).isKey, false)
        XCTAssertEqual(try harness.state(b), "foregroundActive")
    }

    /// After a restart the windows that were on screen come back, restored, the key one last
    /// (with the keyboard), as iPadOS restores all windows.
    func testARestartPutsTheWindowsOnScreenBackWithTheKeyOneFocused() throws {
        let hidden = try harness.openNote("hidden", title: "Hidden")
        _ = try harness.json("background", hidden)
        let a = try harness.openNote("left", title: "Left")
        let b = try harness.openNote("right", title: "Right")
        try harness.type(a, "left text")
        try harness.eventually("two windows") { try sway.windows().count == 2 }
        let pidA = try XCTUnwrap(harness.session(a)["pid"] as? Int)
        try sway.swaymsg("[pid=\(pidA)] focus")
        try harness.eventually("a is the key scene") { try harness.session(a)["key"] as? Bool == true }

        XCTAssertEqual(harness.stop(signal: SIGTERM), 0)
        XCTAssertTrue(try sway.windows().isEmpty, "the broker's stop took the windows away")
        try harness.start()
        try harness.eventually("both windows are back") { try sway.windows().count == 2 }
        try harness.eventually("the key one has the keyboard again") {
            try window(of: a)?.focused == true && harness.session(a)["key"] as? Bool == true
        }
        XCTAssertEqual(try harness.state(b), "foregroundActive")
        XCTAssertEqual(try harness.state(hidden), "unattached", "a scene that was not on screen stays away")
        XCTAssertEqual(try harness.noteState(a).text, "left text")
    }
}

/// What GTK gives a scene's window that the hand-drawn one lacked, through real input: the
/// A compositor that does not grant the broker's activations (sway told to ignore them here; weston
/// has no xdg-activation, mutter and KWin refuse it): `wmctl activate` of a window on screen
/// cannot move the keyboard, and the broker says so rather than call a scene key that has no
/// keyboard (66.1).
final class RefusedActivationTests: WindowTestCase {
    override var swayConfiguration: [String] { ["focus_on_window_activation none"] }

    /// The answer says why, watch has didResignKey keyRefused, and `sessions` keeps the key
    /// on the window that has the keyboard. A scene whose window gets the keyboard is key again.
    func testAnActivationTheCompositorDoesNotGrantLeavesTheKeyWhereTheKeyboardIs() throws {
        let a = try harness.openNote("first", title: "First")
        let b = try harness.openNote("second", title: "Second")
        try harness.eventually("sway gave the new window the keyboard") {
            try harness.noteState(b).isKey && harness.session(b)["key"] as? Bool == true && !harness.noteState(a).isKey
        }
        let watch = try harness.startWatch(["--session", a])
        defer { watch.stop() }
        let reply = try harness.json("activate", a)
        let detail = reply["detail"] as? String ?? ""
        XCTAssertTrue(detail.contains("not the key scene: the compositor did not give its window the keyboard, which stays with the window of session \(b)"), detail)
        XCTAssertEqual(reply["state"] as? String, "foregroundActive")
        XCTAssertEqual(try harness.session(b)["key"] as? Bool, true, "the key is where the keyboard is")
        XCTAssertNotEqual(try harness.session(a)["key"] as? Bool, true)
        XCTAssertFalse(try harness.noteState(a).isKey)
        try harness.eventually("watch said the compositor kept the keyboard") {
            watch.jsonLines.contains { $0["event"] as? String == "didResignKey" && $0["detail"] as? String == "keyRefused" }
        }
        // The user gives it the keyboard: the key follows.
        let pid = try XCTUnwrap(harness.session(a)["pid"] as? Int)
        try sway.swaymsg("[pid=\(pid)] focus")
        try harness.eventually("a is key once its window has the keyboard") { try harness.session(a)["key"] as? Bool == true }
    }

    /// A scene without a window (the Python example draws none) never takes the key from a
    /// window that has the keyboard (66.1): before, `sessions` called it key while the note typed on.
    func testASceneWithoutAWindowDoesNotTakeTheKeyFromAWindowThatHasTheKeyboard() throws {
        let note = try harness.openNote("typed", title: "Typed")
        try harness.eventually("the note's window has the keyboard") {
            try harness.noteState(note).isKey && harness.session(note)["key"] as? Bool == true
        }
        let tally = BrokerHarness.repository.appendingPathComponent("Examples/python/tally.py").path
        try harness.install(app: "tally", manifest: [
            "executable": tally, "supportsMultipleScenes": true, "activityTypes": ["tally.count"],
            "configurations": [["name": "Counter", "role": "windowApplication", "delegate": "TallyScene"]],
        ])
        let reply = try harness.json("open", "tally")
        let session = try XCTUnwrap(reply["session"] as? String)
        let detail = reply["detail"] as? String ?? ""
        XCTAssertTrue(detail.contains("not the key scene: it has no window, which stays with the window of session \(note)"), detail)
        XCTAssertEqual(try harness.state(session), "foregroundActive")
        XCTAssertEqual(try harness.session(note)["key"] as? Bool, true, "the keyboard is the note's")
        try sway.wtype("still here")
        try harness.eventually("and the note takes the typing") { try harness.noteState(note).text == "still here" }
    }
}

/// pointer places the cursor, and the Wayland clipboard carries text from one window to another
/// (and to any other client). The windows float at fixed places here.
final class PointerAndClipboardTests: WindowTestCase {
    override var swayConfiguration: [String] {
        [
            "for_window [app_id=\"notes\"] floating enable",
            "for_window [title=\"Source\"] move position 0 0",
            "for_window [title=\"Target\"] move position 640 0",
        ]
    }

    /// Select All and Copy in one window, Paste in another: the text moves through the
    /// compositor's clipboard, which `wl-paste` (any other client) reads too.
    func testCopyInOneWindowAndPasteInAnother() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/wl-paste") else { throw XCTSkip("wl-clipboard is not installed (make test installs it)") }
        let source = try harness.openNote("copied", title: "Source")
        try harness.type(source, "carried over")
        let target = try harness.openNote("pasted", title: "Target")
        try harness.type(target, "got: ")
        _ = try harness.json("send", target, "move-cursor", "--arg", "position=5")
        try harness.eventually("both windows in place") { try placed(["Source": (0, 0), "Target": (640, 0)]) }

        try sway.pointer("click", "300", "200")
        try harness.eventually("the source has the keyboard") { try harness.session(source)["key"] as? Bool == true }
        try sway.wtype("-M", "ctrl", "a", "c", "-m", "ctrl")
        try harness.eventually("the clipboard holds the text") {
            let paste = try runToCompletion("/usr/bin/wl-paste", ["--no-newline"], environment: ["WAYLAND_DISPLAY": sway.waylandDisplay, "PATH": "/usr/bin:/bin"])
            return paste.code == 0 && paste.output == "carried over"
        }
        XCTAssertEqual(try harness.noteState(source).text, "carried over", "copying changed nothing")

        try sway.pointer("click", "1200", "400")
        try harness.eventually("the target has the keyboard") { try harness.session(target)["key"] as? Bool == true }
        try sway.wtype("-M", "ctrl", "v", "-m", "ctrl")
        try harness.eventually("pasted into the other window, saved as its note") { try harness.noteState(target).text == "got: carried over" }
    }

    /// Every window titled as given is mapped, at its place.
    private func placed(_ places: [String: (x: Int, y: Int)]) throws -> Bool {
        let windows = try sway.windows()
        return places.allSatisfy { title, place in
            windows.contains { $0.title == title && $0.x == place.x && $0.y == place.y && $0.width > 0 }
        }
    }

    /// A click places the cursor where the pointer is.
    func testAClickPlacesTheCursor() throws {
        let note = try harness.openNote("clicked", title: "Source")
        try harness.type(note, "abcdefghij")
        _ = try harness.json("send", note, "move-cursor", "--arg", "position=0")
        try harness.eventually("the window rule has moved the window into place") { try placed(["Source": (0, 0)]) }
        try sway.pointer("click", "600", "64")  // right of the text on its line: the end
        try harness.eventually("the cursor moved to the end") { try harness.noteState(note).cursor == 10 }
    }
}

/// Snapshots (issue 21): a scene renders its window when it goes to the background and hands
/// the picture over with its restoration activity; the broker keeps the newest per session,
/// deletes it with the session, and `wmctl show --snapshot` writes it out. A small output here,
/// so that the pixel comparison is quick.
final class SnapshotTests: WindowTestCase {
    override var swayConfiguration: [String] { ["output HEADLESS-1 resolution 640x480"] }

    private func pixels(_ path: String) throws -> String {
        try Self.pngPixels([path])
    }

    func testASnapshotEqualsAScreenshotOfTheWindowAndGoesWithItsSession() throws {
        let note = try harness.openNote("pictured", title: "Pictured")
        try harness.type(note, "a picture of me")
        _ = try harness.json("send", note, "move-cursor", "--arg", "position=3")
        let screenshot = try sway.settledScreenshot(harness, "the window is drawn and settled") {
            try sway.windows().count == 1 && window(of: note)?.focused == true
        }
        let shotPath = harness.root + "/screenshot.png"
        try screenshot.write(to: URL(fileURLWithPath: shotPath))
        XCTAssertEqual(try harness.session(note)["hasSnapshot"] as? Bool, false)

        _ = try harness.json("background", note)
        XCTAssertEqual(try harness.session(note)["hasSnapshot"] as? Bool, true)
        let snapPath = harness.root + "/snapshot.png"
        let written = harness.wmctl("show", note, "--snapshot", snapPath)
        XCTAssertEqual(written.code, 0, written.stderr)
        XCTAssertTrue(written.stderr.contains("640x480"), written.stderr)
        // GTK's own rendering of the window's widgets, pixel for pixel what the compositor
        // showed, but for the rounded corners the compositor blends with the desktop.
        let compared = try picture(snapPath, over: shotPath)
        XCTAssertEqual(compared.differ, 0, "the snapshot is what the window showed: \(compared.said)")
        XCTAssertLessThan(compared.translucent, 100, "only the corners are not opaque: \(compared.said)")

        // Kept across a reclaim (no process, no window: the picture is what the switcher has).
        _ = try harness.json("reclaim", note)
        XCTAssertEqual(try harness.session(note)["hasSnapshot"] as? Bool, true)
        XCTAssertTrue(harness.wmctl("sessions").stdout.contains("yes+pic"))

        // A discard deletes it with the session's other data.
        let file = harness.stateDirectory + "/snapshots/\(note).png"
        XCTAssertTrue(FileManager.default.fileExists(atPath: file))
        _ = try harness.json("close", note)
        XCTAssertFalse(FileManager.default.fileExists(atPath: file), "a closed session's snapshot is in no file")
        XCTAssertEqual(try harness.refusal("show", note, "--snapshot", snapPath).code, "sessionDiscarded")
    }

    /// The switcher shows a thumbnail the scene draws with its snapshot (decoding and scaling
    /// every card's whole picture made it wait). It is a miniature of the same picture, kept,
    /// restored and deleted with it; a store from before thumbnails answers with the picture.
    func testAThumbnailOfTheSnapshotIsKeptForTheSwitcher() throws {
        let note = try harness.openNote("small", title: "Small")
        try harness.type(note, "a line of text")
        _ = try harness.json("background", note)
        let snapshots = harness.stateDirectory + "/snapshots"
        let thumbnailFile = snapshots + "/\(note).thumbnail.png"
        XCTAssertTrue(FileManager.default.fileExists(atPath: thumbnailFile), "the scene drew a thumbnail with its snapshot")
        let snapPath = harness.root + "/snapshot.png", thumbPath = harness.root + "/thumbnail.png"
        XCTAssertEqual(harness.wmctl("show", note, "--snapshot", snapPath).code, 0)
        let written = harness.wmctl("show", note, "--snapshot", thumbPath, "--thumbnail")
        XCTAssertEqual(written.code, 0, written.stderr)
        // 640x480 fitted into a card's 244x154.
        XCTAssertTrue(written.stderr.contains("snapshot thumbnail: 205x154"), written.stderr)
        let thumbnailPixels = try pixels(thumbPath)
        XCTAssertTrue(thumbnailPixels.hasPrefix("205x154 "), thumbnailPixels)
        // The same layout scaled by 205/640: flat places (the heading band, the page) have the
        // picture's colours where the scale puts them, and the line of text is in it.
        func colours(_ path: String, _ points: [Int]) throws -> [String] {
            try self.colours(ofFile: path, at: stride(from: 0, to: points.count - 1, by: 2).map { (points[$0], points[$0 + 1]) })
        }
        // (Within a step of rounding: the header bar is a gradient, sampled where the scale puts it.)
        func near(_ a: String, _ b: String) -> Bool {
            let channels = { (hex: String) in stride(from: 0, to: 6, by: 2).compactMap { Int(hex.dropFirst($0).prefix(2), radix: 16) } }
            return zip(channels(a), channels(b)).allSatisfy { abs($0 - $1) <= 2 } && a.count == 6 && b.count == 6
        }
        let scaled = try colours(thumbPath, [100, 3, 200, 150]), original = try colours(snapPath, [312, 9, 623, 467])
        XCTAssertTrue(scaled.count == 2 && zip(scaled, original).allSatisfy(near), "\(scaled) against \(original)")
        let page = try colours(snapPath, [623, 467])[0]
        let textRow = try colours(thumbPath, Array((4...40).flatMap { [$0, 20] }))
        XCTAssertTrue(textRow.contains { $0 != page }, "the text is drawn in the thumbnail: \(textRow)")

        // Kept across a restart, beside its picture; a thumbnail of no session is deleted.
        let orphan = snapshots + "/\(UUID().uuidString.lowercased()).thumbnail.png"
        try Data(contentsOf: URL(fileURLWithPath: thumbPath)).write(to: URL(fileURLWithPath: orphan))
        XCTAssertEqual(harness.stop(), 0)
        try harness.start()
        XCTAssertFalse(FileManager.default.fileExists(atPath: orphan), "a thumbnail without its session's picture is deleted")
        let again = harness.wmctl("show", note, "--snapshot", thumbPath, "--thumbnail")
        XCTAssertTrue(again.stderr.contains("snapshot thumbnail: 205x154"), again.stderr)
        XCTAssertEqual(try pixels(thumbPath), thumbnailPixels)

        // A picture kept before thumbnails existed: asked for one, the broker sends the picture.
        XCTAssertEqual(harness.stop(), 0)
        try FileManager.default.removeItem(atPath: thumbnailFile)
        try harness.start()
        let whole = harness.wmctl("show", note, "--snapshot", thumbPath, "--thumbnail")
        XCTAssertTrue(whole.stderr.contains("snapshot (no thumbnail kept): 640x480"), whole.stderr)
        XCTAssertEqual(try pixels(thumbPath), try pixels(snapPath))

        // A discard deletes both.
        _ = try harness.json("activate", note)
        _ = try harness.json("background", note)
        XCTAssertTrue(FileManager.default.fileExists(atPath: thumbnailFile), "a new picture brings its thumbnail")
        _ = try harness.json("close", note)
        XCTAssertFalse(FileManager.default.fileExists(atPath: thumbnailFile), "a closed session's thumbnail is in no file")
        XCTAssertFalse(FileManager.default.fileExists(atPath: snapshots + "/\(note).png"))
    }

    func testASceneThatNeverWentToTheBackgroundHasNoSnapshotAndSaysSo() throws {
        let note = try harness.openNote("fresh", title: "Fresh")
        let refused = try harness.refusal("show", note, "--snapshot", harness.root + "/none.png")
        XCTAssertEqual(refused.code, "invalidState")
        XCTAssertTrue(refused.message.contains("no snapshot"), refused.message)
        XCTAssertFalse(FileManager.default.fileExists(atPath: harness.root + "/none.png"))
    }
}

/// The reference app's two configurations, as iPad Notes has them: the library scene (`wmctl
/// open notes` with no activity) lists every note, newest first, with a search field; clicking
/// a note opens its editor scene (or brings forward the one that shows it) beside the library.
final class LibraryTests: WindowTestCase {
    /// Room for the library and two editors side by side.
    override func prepare(_ harness: BrokerHarness) throws {
        harness.extraArguments += ["--max-foreground", "3"]
    }

    private func items(_ library: String) throws -> [[String: Any]] {
        try harness.json("send", library, "items")["value"] as? [[String: Any]] ?? []
    }

    func testTheLibraryListsTheNotesAndOpensTheOneClickedInItsEditor() throws {
        let groceries = try harness.openNote("groceries", title: "Groceries")
        try harness.type(groceries, "Groceries\nmilk")
        let ideas = try harness.openNote("ideas", title: "Ideas")
        try harness.type(ideas, "Ideas\nmore of them")
        for editor in [groceries, ideas] { _ = try harness.json("background", editor) }

        let library = try XCTUnwrap(try harness.json("open", "notes")["session"] as? String)
        XCTAssertEqual(try harness.session(library)["configuration"] as? String, "Library")
        try harness.eventually("the library lists both, the newest first") {
            try items(library).map { $0["noteID"] as? String } == ["ideas", "groceries"]
        }
        XCTAssertEqual(try items(library).map { $0["title"] as? String }, ["Ideas", "Groceries"])

        // Click a row: its editor comes forward beside the library, as the key scene.
        func click(_ row: Int) throws {
            let libraryWindow = try XCTUnwrap(try window(of: library))
            let frame = try XCTUnwrap(try items(library)[row]["frame"] as? [Int])
            try sway.pointer("click", "\(libraryWindow.x + frame[0] + frame[2] / 2)", "\(libraryWindow.y + frame[1] + frame[3] / 2)")
        }
        try harness.eventually("the library's window is laid out") { try window(of: library) != nil && (items(library).first?["frame"] as? [Int])?[3] ?? 0 > 0 }
        try click(0)
        try harness.eventually("the clicked note's editor is on screen") { try window(of: ideas) != nil && harness.state(ideas) == "foregroundActive" }
        XCTAssertEqual(try harness.session(ideas)["requestedBy"] as? String, library, "the library asked for it")
        try click(1)
        try harness.eventually("a second editor beside it, the newest the key scene") {
            try window(of: groceries) != nil && harness.session(groceries)["key"] as? Bool == true
        }
        for session in [library, ideas, groceries] { XCTAssertEqual(try harness.state(session), "foregroundActive", session) }
        XCTAssertEqual(try harness.jsonList("sessions").count, 3, "editors were brought forward, none made anew")
        // Typed into elsewhere, a note is the newest: the library follows the note's update.
        try harness.type(groceries, ", bread")
        try harness.eventually("the note typed into is listed first") {
            try items(library).map { $0["noteID"] as? String } == ["groceries", "ideas"]
        }

        // The search field, typed into: only the notes that have the words.
        let pid = try XCTUnwrap(harness.session(library)["pid"] as? Int)
        try sway.swaymsg("[pid=\(pid)] focus")
        try sway.wtype("milk")
        try harness.eventually("the search narrows the list") { try items(library).map { $0["noteID"] as? String } == ["groceries"] }
    }
}
