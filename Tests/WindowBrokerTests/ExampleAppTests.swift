import Foundation
import XCTest

/// The README's SDK sample is a real app (`Examples/minimal-app`): it is the file, it builds,
/// and it runs under the broker with restoration, sync and a keyboard command.
final class ExampleAppTests: BrokerTestCase {
    private static var repository: URL { BrokerHarness.repository }

    func testTheReadmeSampleIsTheExampleApp() throws {
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let example = try String(contentsOf: Self.repository.appendingPathComponent("Examples/minimal-app/MinimalApp.swift"), encoding: .utf8)
        let section = try XCTUnwrap(readme.range(of: "## Writing a scene (SceneWorker)"))
        let open = try XCTUnwrap(readme.range(of: "```swift\n", range: section.upperBound..<readme.endIndex))
        let close = try XCTUnwrap(readme.range(of: "```\n", range: open.upperBound..<readme.endIndex))
        XCTAssertEqual(String(readme[open.upperBound..<close.lowerBound]), example, "README.md's sample and Examples/minimal-app differ")
    }

    func testTheExampleAppRunsRestoresSyncsAndTakesACommand() throws {
        try harness.install(app: "minimal", manifest: [
            "id": "minimal", "executable": "minimal-app", "activityTypes": ["minimal.counter"],
            "commands": [["id": "minimal.reset", "title": "Reset", "input": "r", "modifiers": ["ctrl", "alt"], "insertChild": ["menu": "edit"]]],
        ])
        let first = try XCTUnwrap(try harness.json("open", "minimal")["session"] as? String)
        XCTAssertEqual(try harness.session(first)["title"] as? String, "Counter", "a new session gets the app's title")
        for _ in 0..<3 { _ = try harness.json("send", first, "increment") }
        let second = try XCTUnwrap((try harness.json("send", first, "open-another")["value"]) as? String)
        XCTAssertEqual(try harness.json("send", second, "increment")["value"] as? Int, 1)
        try harness.eventually("the first scene heard the second's count") {
            // The first receives "counted" with 1 from the second; its next increment continues from there.
            try harness.json("send", first, "increment")["value"] as? Int == 2
        }
        _ = try harness.json("background", first)
        _ = try harness.json("reclaim", first)
        _ = try harness.json("activate", first)
        XCTAssertEqual(try harness.json("send", first, "increment")["value"] as? Int, 3, "restored from its activity")
        let reset = try harness.json("key", "ctrl+alt+r", "--session", first)
        XCTAssertEqual(reset["handledBy"] as? String, "scene")
        XCTAssertEqual(try harness.json("send", first, "increment")["value"] as? Int, 1)
    }

    /// The reference app as users get it (the `notes` binary and `apps/notes.json`, not the
    /// probe the other tests run): it answers like an app, with the note, and has no test hooks.
    func testTheReferenceAppAnswersLikeAnAppAndHasNoTestHooks() throws {
        var manifest = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.repository.appendingPathComponent("apps/notes.json"))) as? [String: Any])
        XCTAssertEqual(manifest["executable"] as? String, "notes")
        manifest["name"] = "Notes (as installed)"
        try harness.install(app: "real-notes", manifest: manifest)
        let session = try XCTUnwrap(try harness.json("open", "real-notes", "--activity", "notes.edit", "--info", "noteID=plain")["session"] as? String)

        let typed = try XCTUnwrap(try harness.json("send", session, "type", "--arg", "text=milk, eggs")["value"] as? [String: Any])
        XCTAssertEqual(typed["text"] as? String, "milk, eggs")
        XCTAssertEqual(typed["cursor"] as? Int, 10)
        XCTAssertEqual(typed["noteID"] as? String, "plain")
        XCTAssertNil(typed["callbacks"], "no test state in an app's answer: \(typed)")
        XCTAssertNil(typed["pid"])
        XCTAssertEqual(Set(typed.keys), ["noteID", "text", "cursor", "revision", "tags", "pinned", "bookmarks", "toolbarHidden", "scrollOffset"])
        XCTAssertEqual((try harness.json("send", session, "note")["value"] as? [String: Any])?["text"] as? String, "milk, eggs")

        // The probe's actions are neither declared nor performed.
        let declared = harness.wmctl("actions", "--app", "real-notes").stdout
        for probe in ["state", "threads", "hang", "crash", "allocate", "flood", "exit", "close-socket", "request-activation"] {
            XCTAssertFalse(declared.contains("\n\(probe)") || declared.hasPrefix(probe), "\(probe) is declared:\n\(declared)")
            let refused = harness.wmctl("send", session, probe)
            XCTAssertEqual(refused.code, 1, "\(probe): \(refused.stdout)")
            XCTAssertTrue(refused.stdout.contains("unknown action '\(probe)'"), refused.stdout)
        }
        XCTAssertEqual(try harness.state(session), "foregroundActive", "still running after every probe was refused")

        // Restored after a reclaim from its own activity, cursor included.
        _ = try harness.json("send", session, "move-cursor", "--arg", "position=4")
        _ = try harness.json("background", session)
        _ = try harness.json("reclaim", session)
        _ = try harness.json("activate", session)
        let restored = try XCTUnwrap(try harness.json("send", session, "note")["value"] as? [String: Any])
        XCTAssertEqual(restored["text"] as? String, "milk, eggs")
        XCTAssertEqual(restored["cursor"] as? Int, 4)
    }
}
