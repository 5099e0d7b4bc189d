import Foundation
import XCTest

/// Scenes are windows (issue 20, first part): on a real compositor (a headless sway the test
/// starts), every scene in the foreground is an xdg_toplevel with the app's id, the scene's
/// title and the worker's pid; a scene in the background or reclaimed has no window; one that
/// comes back has its window back.
final class WindowTests: XCTestCase {
    private var sway: SwayHarness!
    private var harness: BrokerHarness!

    override func setUpWithError() throws {
        sway = try SwayHarness()
        harness = try BrokerHarness()
        harness.brokerEnvironment["WAYLAND_DISPLAY"] = sway.waylandDisplay
        try harness.start()
    }

    override func tearDown() {
        harness?.tearDown()
        sway?.stop()
    }

    private func window(of session: String) throws -> SwayHarness.Window? {
        let pid = try harness.session(session)["pid"] as? Int ?? -1
        return try sway.windows().first { $0.pid == Int32(pid) }
    }

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
            XCTAssertEqual(listed["state"] as? String == "foregroundActive" || listed["state"] as? String == "foregroundInactive", true)
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
        try harness.eventually("the window is drawn") { try window(of: note) != nil }
        var before = Data()
        try harness.eventually("two screenshots agree (the frame is settled)") {
            let first = try sway.screenshot()
            Thread.sleep(forTimeInterval: 0.2)
            before = try sway.screenshot()
            return first == before
        }
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
}
