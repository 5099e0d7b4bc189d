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
}
