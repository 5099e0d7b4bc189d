import Foundation
import XCTest

/// What people read: every wmctl command's text output, from a real broker, with titles that
/// have emoji and CJK characters, compared with `Snapshots/human-output.txt`. What changes
/// from run to run (ids, pids, times, sizes, latencies) is replaced by placeholders and runs
/// of spaces are squeezed; that tables still line up in terminal columns is checked apart,
/// on the raw output, with the width of each wide character known to the test.
///
/// After an intended change: `WINDOWBROKER_RECORD_SNAPSHOTS=1 swift test --filter HumanOutputTests`
/// rewrites the file; review its diff like code.
final class HumanOutputTests: BrokerTestCase {
    private static let snapshotPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Snapshots/human-output.txt").path

    /// The characters of this test's titles that take two terminal columns.
    private static let wide: Set<Character> = ["🧳", "🧦", "買", "い", "物", "リ", "ス", "ト"]

    private var transcript: [String] = []
    private var replacements: [(String, String)] = []

    func testEveryCommandsHumanOutput() throws {
        let packing = try harness.openNote("packing", title: "Packing 🧳 list")
        let shopping = try harness.openNote("kaimono", title: "買い物リスト", extra: ["--new"])
        name(packing, "S1")
        name(shopping, "S2")
        try harness.type(packing, "socks and 🧦")
        _ = try harness.json("send", packing, "move-cursor", "--arg", "position=3")
        _ = try harness.json("send", packing, "store", "--arg", "key=scrollOffset", "--arg", "value=240")

        // Sizes are placeholders, but a PSS not read yet prints as `…`: wait for the readings.
        try harness.eventually("the broker read both scenes' memory") {
            try harness.jsonList("sessions").allSatisfy { ($0["pss"] as? Int ?? 0) > 0 }
        }
        try record("status")
        try record("apps", table: true)
        try record("background", packing)
        try record("sessions", table: true)
        try record("sessions", "-q")
        try record("show", packing)
        try record("search", "socks", table: true)
        try record("post", "notes", "hello", "--payload-json", #"{"from":"snapshot"}"#, "--wait")
        try record("defaults", "notes")
        try record("defaults", "notes", "set", "toolbarHidden", "true")
        try record("defaults", "notes")
        try record("menu", "--session", shopping)
        try record("commands", "--session", shopping, table: true)
        try record("commands", "--session", shopping, "--overlay", table: true)
        try record("key", "ctrl+u", "--session", shopping, expectExit: 1)
        try record("key", "ctrl+shift+p", "--session", shopping)
        _ = try harness.json("send", shopping, "set-text", "--arg", "text=卵と牛乳")
        try record("send", shopping, "fly", "--arg", "to=moon", expectExit: 1)
        try record("actions", "--app", "notes-single")
        try record("logs", shopping)
        try record("ping", "--count", "5")
        try record("pressure")
        try record("top", "--once", table: true)
        try record("refresh", shopping)

        // A reclaim and a restore as `watch` prints them, aligned, with the title.
        let watch = try harness.subscribed(harness.start(wmctl: ["watch", "--session", packing, "--count", "11"]))
        try record("reclaim", packing)
        try record("activate", packing)
        try record("background", packing)
        let watched = watch.wait()
        XCTAssertEqual(watched.code, 0, watched.stderr)
        append(["watch", "--session", packing, "--count", "11"], watched.stdout)

        try record("close", shopping)
        try record("show", shopping, expectExit: 1)
        try record("show", "zzzz", expectExit: 1)
        try record("sesions", expectExit: 2)
        try record("open", "nosuchapp", expectExit: 1)
        try record("open", "notes", "--title", "Third", "--info", "noteID=third", "--new")
        try record("open", "notes", "--session", String(packing.prefix(6)))

        let text = transcript.joined(separator: "\n")
        if ProcessInfo.processInfo.environment["WINDOWBROKER_RECORD_SNAPSHOTS"] == "1" {
            try FileManager.default.createDirectory(atPath: (Self.snapshotPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: Self.snapshotPath, atomically: true, encoding: .utf8)
            print("recorded \(Self.snapshotPath)")
            return
        }
        let expected = try String(contentsOfFile: Self.snapshotPath, encoding: .utf8)
        if text != expected {
            let got = text.components(separatedBy: "\n"), want = expected.components(separatedBy: "\n")
            let index = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, want.count)
            XCTFail("""
                wmctl's human output differs from Snapshots/human-output.txt at line \(index + 1):
                  expected: \(index < want.count ? want[index] : "(end)")
                  got:      \(index < got.count ? got[index] : "(end)")
                (WINDOWBROKER_RECORD_SNAPSHOTS=1 rewrites it after an intended change)
                --- got ---
                \(text)
                """)
        }
    }

    // MARK: - Recording

    private func name(_ session: String, _ placeholder: String) {
        replacements.append((session, "<\(placeholder)>"))
        replacements.append((String(session.prefix(8)), "<\(placeholder)>"))
        replacements.append((String(session.prefix(6)), "<\(placeholder)>"))
    }

    private func record(_ arguments: String..., table: Bool = false, expectExit: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = harness.wmctl(Array(arguments))
        XCTAssertEqual(result.code, expectExit, "wmctl \(arguments.joined(separator: " ")): \(result.stderr)", file: file, line: line)
        if table { assertAligned(result.stdout, arguments, file: file, line: line) }
        append(Array(arguments), result.stdout + (result.stderr.isEmpty ? "" : "[stderr] " + result.stderr))
    }

    private func append(_ arguments: [String], _ output: String) {
        let pids = livePIDs  // asked once per command: it runs wmctl itself
        transcript.append("$ wmctl " + normalize(arguments.joined(separator: " "), pids: pids))
        transcript.append(normalize(output, pids: pids).trimmingCharacters(in: .newlines))
        transcript.append("")
    }

    /// Placeholders for what differs between runs; runs of spaces squeezed to two.
    private func normalize(_ text: String, pids: [Int]) -> String {
        var out = text
        for (value, placeholder) in replacements { out = out.replacingOccurrences(of: value, with: placeholder) }
        let patterns: [(String, String)] = [
            (#"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"#, "<time>"),
            (#"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{3})? [+-]\d\d:\d\d"#, "<time>"),
            (#"\b\d\d:\d\d:\d\d\.\d{3}\b"#, "<clock>"),
            (#"\b(just now|\d+s ago|\d+ min ago|\d+h ago|\d+ days ago)"#, "<ago>"),
            (#"\bup (\d+d )?(\d+h ?)?(\d+min ?)?(\d+s)?"#, "up <uptime>"),
            (#"\d+(\.\d+)? (B|KiB|MiB|GiB)\b"#, "<size>"),
            (#"\d+(\.\d+)? (µs|ms|s)\b"#, "<latency>"),
            (#"\d+\.\d%"#, "<percent>"),
            (#"(\bpid:?|"pid":) ?\d+"#, "$1 <pid>"),
            (#"\[\d+\]"#, "[<pid>]"),
            (#"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"#, "<uuid>"),
            (#" {2,}"#, "  "),
        ]
        for (pattern, template) in patterns {
            out = out.replacingOccurrences(of: pattern, with: template, options: .regularExpression)
        }
        // The sessions table's PID column: the live workers' pids.
        for pid in pids { out = out.replacingOccurrences(of: #"\b\#(pid)\b"#, with: "<pid>", options: .regularExpression) }
        return out
    }

    private var livePIDs: [Int] {
        let sessions = (try? harness.jsonList("sessions")) ?? []
        return sessions.compactMap { $0["pid"] as? Int } + [Int(harness.broker?.processIdentifier ?? 0)]
    }

    /// Every row's cells start in the same terminal column as the header's.
    private func assertAligned(_ output: String, _ arguments: [String], file: StaticString, line: UInt) {
        func width(_ text: Substring) -> Int { text.reduce(0) { $0 + (Self.wide.contains($1) ? 2 : 1) } }
        func starts(_ row: Substring) -> [Int] {
            var columns: [Int] = []
            var index = row.startIndex
            while index < row.endIndex {
                let cell = row[index...].range(of: #"\S.*?(?=  |$)"#, options: .regularExpression)
                guard let cell else { break }
                columns.append(width(row[row.startIndex..<cell.lowerBound]))
                index = cell.upperBound
            }
            return columns
        }
        // A table ends at a blank line (top's recent events follow one).
        let rows = output.split(separator: "\n", omittingEmptySubsequences: false)
            .drop { !$0.hasPrefix("ID") && !$0.hasPrefix("#") && !$0.hasPrefix("SHORTCUT") }.prefix { !$0.isEmpty }
        guard let header = rows.first else { return XCTFail("no table in wmctl \(arguments.joined(separator: " ")):\n\(output)", file: file, line: line) }
        let columns = starts(header)
        XCTAssertGreaterThan(columns.count, 2, "header: \(header)", file: file, line: line)
        for row in rows.dropFirst() {
            XCTAssertEqual(Array(starts(row).prefix(columns.count)), columns,
                           "wmctl \(arguments.joined(separator: " ")): a row out of line with the header:\n\(header)\n\(row)", file: file, line: line)
        }
    }
}

/// Issue 67 item 12: a title is text a scene supplies. Before: `wmctl sessions`, `search` and
/// `show` printed it raw, so an OSC sequence retitled the terminal and CR/LF forged a row.
final class ControlCharacterOutputTests: BrokerTestCase {
    func testHumanOutputEscapesControlCharactersAndJSONKeepsThem() throws {
        let forged = "Trip\u{1b}]0;pwned\u{07}\r\n0000000  forged  row"
        let session = try harness.openNote("escapes", title: forged)
        for arguments in [["sessions"], ["show", session]] {
            let result = harness.wmctl(arguments)
            XCTAssertEqual(result.code, 0, result.stderr)
            XCTAssertFalse(result.stdout.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{07}" || $0 == "\r" }, "\(arguments): \(result.stdout)")
            XCTAssertTrue(result.stdout.contains("Trip\\u{1b}]0;pwned\\u{7}\\r\\n"), "\(arguments): \(result.stdout)")
        }
        let listed = try harness.jsonList("sessions").first { $0["id"] as? String == session }
        XCTAssertEqual(listed?["title"] as? String, forged, "--json stays exact")
    }
}
