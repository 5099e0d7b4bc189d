import Foundation
import XCTest

/// Scenes on weston (nested in the test's sway, see WestonHarness): a compositor that draws no
/// title bars and has no layer shell. A scene's window brings its own (GTK's header bar), whose
/// close button closes the window and keeps the session; the switcher and the command overlay
/// fall back to a full-screen window of their own, where a click on a card opens that session
/// and a click on a command performs it.
final class WestonTests: WindowTestCase {
    override var onWeston: Bool { true }

    /// The box of the white on weston's output now (a GTK window's text area), if any.
    private func whiteOnWeston() throws -> (x: Int, y: Int, width: Int, height: Int)? {
        let weston = try XCTUnwrap(weston)
        return try weston.bounds(of: "ffffff", in: sway.screenshot())
    }

    /// The box of a GTK window's text area, once it is on screen.
    private func textArea() throws -> (x: Int, y: Int, width: Int, height: Int) {
        var found: (x: Int, y: Int, width: Int, height: Int)?
        try harness.eventually("a window on weston") {
            found = try whiteOnWeston()
            return found.map { $0.width > 200 && $0.height > 200 } ?? false
        }
        return try XCTUnwrap(found)
    }

    /// How dark a colour is: its brightest channel (0 black, 255 white).
    private func brightness(_ colour: String) -> Int {
        stride(from: 0, to: 6, by: 2).compactMap { Int(colour.dropFirst($0).prefix(2), radix: 16) }.max() ?? 0
    }

    /// weston killed with two notes on it (66.2 on a compositor that is not wlroots'): both
    /// are saved as compositorLost, and both come back on the new weston with their text.
    func testScenesWestonTookAwayComeBackWhenItIsThereAgain() throws {
        let weston = try XCTUnwrap(weston)
        let first = try harness.openNote("first", title: "First")
        try harness.type(first, "kept through the crash")
        let second = try harness.openNote("second", title: "Second")
        _ = try textArea()
        weston.goAway()
        try waitUntilSavedForTheCompositor([first, second])
        try weston.comeBack()
        for note in [first, second] {
            try harness.eventually("\(note) is back", timeout: 20) { try harness.state(note) == "foregroundActive" }
        }
        _ = try textArea()
        XCTAssertEqual(try harness.noteState(first).text, "kept through the crash")
    }

    func testTheHeaderBarsCloseButtonClosesTheWindowAndKeepsTheSession() throws {
        let note = try harness.openNote("titled", title: "Titled")
        try harness.type(note, "kept across the close")
        let area = try textArea()
        // GTK's header bar sits on the text area (46 pixels here); its close button at its end.
        let close = (area.x + area.width - 24, area.y - 25)
        let header = try colours(try sway.screenshot(), at: [close, (close.0 - 80, close.1)])
        XCTAssertLessThan(brightness(header[0]), 0x60, "the close button's icon is drawn at \(close): \(header)")
        XCTAssertGreaterThan(brightness(header[1]), 0xc0, "beside it is the header bar: \(header)")

        try sway.pointer("click", String(close.0), String(close.1))
        try harness.eventually("the window is closed and the session kept") { try harness.state(note) == "unattached" }
        try harness.eventually("no window is left on weston") { try whiteOnWeston() == nil }
        // The session comes back with what it held.
        _ = try harness.json("activate", note)
        try harness.eventually("it is back") { try harness.state(note) == "foregroundActive" }
        XCTAssertEqual(try harness.noteState(note).text, "kept across the close")
    }

    func testTheSwitcherIsAFullScreenWindowWhereThereIsNoLayerShell() throws {
        let weston = try XCTUnwrap(weston)
        let away = try harness.openNote("away", title: "Away")
        try harness.type(away, "reclaimed text")
        _ = try harness.json("background", away)
        _ = try harness.json("reclaim", away)
        let here = try harness.openNote("here", title: "Here")
        _ = try textArea()

        let (pid, items) = try showSystemUI("switcher")
        XCTAssertGreaterThan(pid, 0)
        XCTAssertEqual(items.map(\.id), [here, away])
        // The cards are where the switcher says, in its window over all of weston's output.
        let onScreen = items.map { (x: weston.origin.x + $0.x, y: weston.origin.y + $0.y, width: $0.width, height: $0.height) }
        let shot = try sway.settledScreenshot(harness, "the switcher on screen")
        let seen = try colours(shot, at: onScreen.map { ($0.x + 20, $0.y + $0.height - 6) }
                               + [(weston.origin.x + 4, weston.origin.y + weston.size.height - 4)])
        XCTAssertEqual(seen, [SwitcherColours.card, SwitcherColours.card, SwitcherColours.background], "cards at \(onScreen)")

        // A click on the reclaimed session's card brings it back.
        try sway.pointer("click", String(onScreen[1].x + onScreen[1].width / 2), String(onScreen[1].y + onScreen[1].height / 2))
        try harness.eventually("the clicked session is active again") { try harness.state(away) == "foregroundActive" }
        XCTAssertEqual(try harness.noteState(away).text, "reclaimed text")
        try harness.eventually("the switcher is gone") { !(try systemUIShown()) }
    }

    func testTheCommandOverlayIsAFullScreenWindowWhereThereIsNoLayerShell() throws {
        let weston = try XCTUnwrap(weston)
        let note = try harness.openNote("commanded", title: "Commanded")
        _ = try textArea()
        let (_, items) = try showSystemUI("overlay")
        let listed = Set(try harness.jsonList("commands", "--overlay").compactMap { $0["id"] as? String })
        XCTAssertEqual(Set(items.map(\.id)), listed, "the overlay shows what `commands --overlay` lists")
        // Its panel is in the middle of weston's output, over the dimmed window.
        let middle = (weston.origin.x + weston.size.width / 2, weston.origin.y + weston.size.height / 2)
        let shot = try sway.settledScreenshot(harness, "the overlay on screen")
        XCTAssertEqual(try colours(shot, at: [middle]), ["f4f4f2"], "the overlay's panel at \(middle)")

        // A click on a command performs it for the scene the overlay was shown over.
        let newWindow = try XCTUnwrap(items.first { $0.id == "file.newWindow" })
        try sway.pointer("click", String(weston.origin.x + newWindow.x + newWindow.width / 2),
                         String(weston.origin.y + newWindow.y + newWindow.height / 2))
        try harness.eventually("New Window was performed") { try harness.jsonList("sessions").count == 2 }
        try harness.eventually("the overlay is gone") { !(try systemUIShown()) }
        XCTAssertEqual(try harness.state(note), "foregroundActive")
    }
}
