import Foundation
import XCTest

/// Searchable activities, through the notes app (its activities are eligible for search and
/// carry the note's first words and tags as keywords) and `wmctl search`.
final class SearchTests: BrokerTestCase {
    private func search(_ words: String, _ extra: String...) throws -> [[String: Any]] {
        try harness.jsonList(["search", words] + extra)
    }

    private func sessions(_ hits: [[String: Any]]) -> [String] { hits.compactMap { $0["session"] as? String } }

    private func note(_ id: String, title: String, text: String) throws -> String {
        let session = try harness.json("open", "notes", "--title", title, "--info", "noteID=\(id)")["session"] as! String
        _ = try harness.json("send", session, "type", "--arg", "text=\(text)")
        return session
    }

    /// The index follows scene updates within a second (they are written at most once a second).
    private func eventuallyFound(_ words: String, _ session: String) throws {
        try harness.eventually("'\(words)' finds \(session)") { try sessions(search(words)).contains(session) }
    }

    func testFindsByTitleKeywordTextPrefixAndWithoutDiacritics() throws {
        let trip = try note("trip", title: "Packing list", text: "Reisepaß Café crème")
        let other = try note("other", title: "Groceries", text: "milk bread")
        _ = try harness.json("send", trip, "tag", "--arg", "tag=alpaca")
        try eventuallyFound("alpaca", trip)
        XCTAssertEqual(sessions(try search("packing")), [trip], "by title")
        XCTAssertEqual(sessions(try search("alpaca")), [trip], "by keyword only (a tag)")
        XCTAssertEqual(sessions(try search("crème")), [trip], "by userInfo text")
        XCTAssertEqual(sessions(try search("creme")), [trip], "diacritics do not matter")
        XCTAssertEqual(sessions(try search("CAFE")), [trip], "nor case")
        XCTAssertEqual(sessions(try search("reisepass")), [trip], "ß and ss are the same")
        XCTAssertEqual(sessions(try search("pack*")), [trip], "a prefix")
        XCTAssertEqual(sessions(try search("bread")), [other])
        XCTAssertTrue(try search("packing bread").isEmpty, "every word must match")
        XCTAssertTrue(try search("zebra").isEmpty)
        let hit = try XCTUnwrap(try search("milk").first)
        XCTAssertEqual(hit["app"] as? String, "notes")
        XCTAssertEqual(hit["title"] as? String, "Groceries")
        XCTAssertEqual(hit["activityType"] as? String, "notes.edit")
        XCTAssertEqual(hit["targetContentIdentifier"] as? String, "other")
        XCTAssertEqual(hit["rank"] as? Int, 1)
        XCTAssertTrue((hit["snippet"] as? String ?? "").contains("[milk]"), "\(hit)")
        // Query syntax is never FTS5 syntax: quotes, operators and parentheses are just text.
        XCTAssertTrue(try search("\"milk OR (zebra").isEmpty)
        XCTAssertEqual(try harness.refusal("search", "***").code, "invalidRequest")
        XCTAssertEqual(try harness.refusal("search", "milk", "--app", "nope").code, "unknownApp")
        XCTAssertEqual(sessions(try search("milk", "--app", "notes")), [other])

        let shown = try harness.json("show", trip)
        let current = try XCTUnwrap(shown["currentActivity"] as? [String: Any])
        XCTAssertEqual(current["eligibleForSearch"] as? Bool, true)
        XCTAssertTrue((current["keywords"] as? [String] ?? []).contains("#alpaca"))
    }

    func testRanksTheBetterMatchFirst() throws {
        let inTitle = try note("a", title: "Budget", text: "numbers")
        let inText = try note("b", title: "Misc", text: "the budget was discussed somewhere in here among many other words")
        try eventuallyFound("budget", inTitle)
        try eventuallyFound("budget", inText)
        let hits = try search("budget")
        XCTAssertEqual(sessions(hits), [inTitle, inText], "a title match outranks a word in the text")
        XCTAssertGreaterThan(hits[0]["score"] as? Double ?? 0, hits[1]["score"] as? Double ?? 0)
    }

    func testOnlyEligibleActivitiesAndOnlyTheLatestAreIndexed() throws {
        let session = try note("n", title: "Diary", text: "secretword")
        try eventuallyFound("secretword", session)
        _ = try harness.json("send", session, "searchable", "--arg", "value=false")
        try harness.eventually("a non-eligible activity is not found") { try search("secretword").isEmpty && search("diary").isEmpty }
        _ = try harness.json("send", session, "searchable", "--arg", "value=true")
        try eventuallyFound("secretword", session)
        // An edit replaces the entry: the old word no longer matches.
        _ = try harness.json("send", session, "set-text", "--arg", "text=newword")
        try eventuallyFound("newword", session)
        XCTAssertTrue(try search("secretword").isEmpty)
    }

    func testAClosedSessionLeavesNothingInTheIndexOrTheStateFiles() throws {
        let marker = "zq" + UUID().uuidString.prefix(8).lowercased().filter(\.isLetter)
        let session = try note("gone", title: "Temporary", text: "\(marker) text")
        _ = try harness.json("background", session)
        try eventuallyFound(marker, session)
        XCTAssertTrue(try stateFilesContain(marker), "the check below can fail: the marker is on disk now")
        _ = try harness.json("close", session)
        XCTAssertTrue(try search(marker).isEmpty)
        XCTAssertTrue(try search("temporary").isEmpty)
        XCTAssertFalse(try stateFilesContain(marker), "no file of the state directory holds the closed session's text")
    }

    private func stateFilesContain(_ text: String) throws -> Bool {
        let directory = harness.root + "/state"
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            if let data = FileManager.default.contents(atPath: directory + "/" + name), data.range(of: Data(text.utf8)) != nil { return true }
        }
        return false
    }

    func testAHitReopensAReclaimedSceneWithItsText() throws {
        let session = try note("r", title: "Recipe", text: "lasagne layers")
        _ = try harness.json("background", session)
        _ = try harness.json("reclaim", session)
        let hit = try XCTUnwrap(try search("lasagne").first)
        XCTAssertEqual(hit["session"] as? String, session)
        XCTAssertEqual(try harness.state(session), "unattached")
        _ = try harness.json("activate", try XCTUnwrap(hit["session"] as? String))
        XCTAssertEqual(try harness.noteState(session).text, "lasagne layers")
    }

    func testTheIndexSurvivesABrokerSIGKILLAndIsRebuiltWhenDeletedOrDamaged() throws {
        let session = try note("k", title: "Keys", text: "spare keys under the mat")
        _ = try harness.json("background", session)
        try eventuallyFound("spare", session)
        harness.stop(signal: SIGKILL)
        try harness.start()
        XCTAssertEqual(sessions(try search("spare")), [session], "after a SIGKILL")

        harness.stop(signal: SIGTERM)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: harness.root + "/state/search.sqlite" + suffix) }
        try harness.start()
        XCTAssertEqual(sessions(try search("spare")), [session], "rebuilt from the stored activity when deleted")
        XCTAssertEqual((try harness.json("status")["warnings"] as? [String])?.count, 0, "a missing index is no warning")

        harness.stop(signal: SIGTERM)
        try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: harness.root + "/state/search.sqlite"))
        try harness.start()
        XCTAssertEqual(sessions(try search("spare")), [session], "rebuilt when damaged")
        let warnings = try harness.json("status")["warnings"] as? [String] ?? []
        XCTAssertTrue(warnings.contains { $0.contains("search index") && $0.contains("damaged") }, "\(warnings)")
    }

    func testAnUncleanStopRebuildsTheIndexAndACleanOneDoesNot() throws {
        // The index's commits are not forced to disk one by one: a marker that lives while the
        // broker runs tells the next start whether the broker stopped cleanly.
        let session = try note("u", title: "Umbrella", text: "umbrella by the door")
        _ = try harness.json("background", session)
        try eventuallyFound("umbrella", session)
        let marker = harness.root + "/state/search.sqlite-running"
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the marker exists while the broker runs")

        harness.stop(signal: SIGTERM)
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "a clean stop removes it")
        try harness.start()
        XCTAssertFalse(harness.brokerLog.contains("unclean stop"), "a clean stop needs no rebuild:\n\(harness.brokerLog)")
        XCTAssertEqual(sessions(try search("umbrella")), [session])

        harness.stop(signal: SIGKILL)
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "a killed broker leaves it")
        try harness.start()
        XCTAssertTrue(harness.brokerLog.contains("search index rebuilt") && harness.brokerLog.contains("unclean stop"), harness.brokerLog)
        XCTAssertEqual(sessions(try search("umbrella")), [session], "rebuilt from the stored activity")
        XCTAssertEqual((try harness.json("status")["warnings"] as? [String])?.count, 0, "an unclean stop is no warning")
    }

    func testAHitInAnAppNoLongerInstalledIsReportedNotOffered() throws {
        try harness.installNotes(as: "scratch", [:])
        let session = try harness.json("open", "scratch", "--title", "Scratch", "--info", "noteID=s")["session"] as! String
        _ = try harness.json("send", session, "type", "--arg", "text=ephemeral")
        _ = try harness.json("background", session)
        try eventuallyFound("ephemeral", session)
        _ = try harness.json("reclaim", session)
        try FileManager.default.removeItem(atPath: harness.appsDirectory + "/scratch.json")
        kill(harness.brokerPID, SIGHUP)
        try harness.eventually("the app is gone") { try !harness.jsonList("apps").contains { $0["id"] as? String == "scratch" } }
        let result = harness.wmctl("--json", "search", "ephemeral")
        XCTAssertEqual(result.code, 1, "nothing that can be opened: no match")
        XCTAssertEqual((try result.json() as? [Any])?.count, 0, "not offered")
        XCTAssertTrue(result.stderr.contains("no longer installed"), result.stderr)
    }
}
