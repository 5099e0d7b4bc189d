import Foundation
import XCTest

/// Nothing lost, nothing stuck (issue: hardening): a save that fails is an error, and an
/// explicit reclaim never takes a scene whose latest state could not be saved unless forced.
final class FailedSaveTests: BrokerTestCase {
    func testAStateTooLargeToSaveIsAnErrorAndReclaimIsRefusedUntilForced() throws {
        let note = try harness.openNote("big")
        try harness.type(note, "small and saved")
        _ = try harness.json("background", note)
        _ = try harness.json("activate", note)
        // 300,000 characters: the restoration activity is over the 256 KiB limit.
        let chunk = String(repeating: "x", count: 100_000)
        for _ in 0..<3 { try harness.type(note, chunk) }

        let background = try harness.refusal("background", note)
        XCTAssertEqual(background.code, "payloadTooLarge", background.message)
        XCTAssertTrue(background.message.contains("not saved"), background.message)
        XCTAssertEqual(try harness.state(note), "background")
        let pid = try harness.noteState(note).pid

        let reclaim = try harness.refusal("reclaim", note)
        XCTAssertEqual(reclaim.code, "payloadTooLarge", reclaim.message)
        XCTAssertTrue(reclaim.message.contains("--force"), reclaim.message)
        XCTAssertEqual(try harness.state(note), "background", "refused: the scene keeps running")
        XCTAssertEqual(try harness.noteState(note).pid, pid, "the same process, with the unsaved text")
        XCTAssertEqual(try harness.noteState(note).text.count, "small and saved".count + 300_000)

        // Forced: the process goes, and the last committed state is what comes back.
        XCTAssertEqual(try harness.json("reclaim", note, "--force")["state"] as? String, "unattached")
        _ = try harness.json("activate", note)
        XCTAssertEqual(try harness.noteState(note).text, "small and saved")
    }

    func testAHangingSaveMakesReclaimFailWithoutTakingTheScene() throws {
        let note = try harness.openNote("hang")
        _ = try harness.json("background", note)
        _ = try harness.json("send", note, "hang-on-save")
        let pid = try harness.noteState(note).pid
        let reclaim = try harness.refusal("reclaim", note)
        XCTAssertEqual(reclaim.code, "timedOut", reclaim.message)
        XCTAssertTrue(processExists(pid), "refused, not killed")
        XCTAssertEqual(try harness.state(note), "background")
    }
}
