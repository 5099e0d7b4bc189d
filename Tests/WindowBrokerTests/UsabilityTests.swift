import Foundation
import IPCWire
import XCTest

@testable import WindowBroker

/// wmctl as people use it next to other command-line tools: in pipes, asking for its version.
final class UsabilityTests: BrokerTestCase {
    /// Runs wmctl with stdout on a pipe whose reader is gone; returns the exit status and stderr.
    private func wmctlIntoClosedPipe(_ arguments: [String]) throws -> (code: Int32, stderr: String) {
        let process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: BrokerHarness.binDirectory + "/wmctl")
        process.arguments = ["--socket", harness.socketPath] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try out.fileHandleForReading.close()
        try process.run()
        harness.remember(pid: process.processIdentifier)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stderr)
    }

    func testAClosedPipeEndsWmctlQuietly() throws {
        _ = try harness.openNote("piped")
        for arguments in [["--json", "sessions"], ["sessions"], ["status"], ["--json", "search", "piped"]] {
            let result = try wmctlIntoClosedPipe(arguments)
            XCTAssertEqual(result.code, 141, "wmctl \(arguments.joined(separator: " ")): \(result.stderr)")
            XCTAssertEqual(result.stderr, "", "no backtrace, no message")
        }
    }

    func testWatchIntoAReaderThatStopsEndsQuietly() throws {
        let process = WaitableProcess()
        process.executableURL = URL(fileURLWithPath: BrokerHarness.binDirectory + "/wmctl")
        process.arguments = ["--socket", harness.socketPath, "watch"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        harness.remember(pid: process.processIdentifier)
        // Like `wmctl watch | grep -m1 created`: read until the first event, then stop reading.
        try harness.eventually("the watch started") {
            String(decoding: err.fileHandleForReading.availableData, as: UTF8.self).contains("watching")
        }
        _ = try harness.openNote("first")
        _ = out.fileHandleForReading.availableData
        try out.fileHandleForReading.close()
        _ = try harness.openNote("second")
        try harness.eventually("wmctl watch ended after its reader went away") { !process.isRunning }
        XCTAssertEqual(process.terminationStatus, 141)
        XCTAssertFalse(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("Fatal"))
    }

    func testBothProgramsPrintTheirVersion() throws {
        let wmctl = harness.wmctl(["--version"], socket: false)
        XCTAssertEqual(wmctl.code, 0)
        XCTAssertTrue(wmctl.stdout.hasPrefix("0.") && wmctl.stdout.contains("(protocol "), wmctl.stdout)
        let daemon = try harness.runDaemon(["--version"])
        XCTAssertEqual(daemon.code, 0)
        XCTAssertEqual(daemon.output, wmctl.stdout, "the same release and protocol")
    }

    /// wmctl parses a line without `--generate-completion-script` under a configuration that
    /// has ArgumentParser skip its completion probe; help, usage and completion scripts must
    /// not show that configuration's super-command name.
    func testHelpUsageAndCompletionScriptsNameWmctlWhicheverWayItParses() throws {
        let help = harness.wmctl(["--help"], socket: false)
        XCTAssertEqual(help.code, 0)
        XCTAssertTrue(help.stdout.contains("\nUSAGE: wmctl <subcommand>"), help.stdout)
        let subcommandHelp = harness.wmctl(["help", "status"], socket: false)
        XCTAssertTrue(subcommandHelp.stdout.contains("\nUSAGE: wmctl status "), subcommandHelp.stdout)
        let usage = harness.wmctl(["status", "--bogus"], socket: false)
        XCTAssertEqual(usage.code, 2)
        XCTAssertTrue(usage.stderr.contains("Usage: wmctl status "), usage.stderr)
        XCTAssertFalse((help.stdout + subcommandHelp.stdout + usage.stderr).contains("wmctl-parse"))
        for line in [["--generate-completion-script", "bash"], ["--generate-completion-script=zsh"], ["status", "--generate-completion-script", "fish"]] {
            let script = harness.wmctl(line, socket: false)
            XCTAssertEqual(script.code, 0, "\(line): \(script.stderr)")
            XCTAssertTrue(script.stdout.contains("wmctl") && script.stdout.count > 1000, "\(line): \(script.stdout.prefix(200))")
        }
    }

    func testAnyUniquePrefixOfFourOrMoreCharactersNamesASession() throws {
        let session = try harness.openNote("short")
        let prefix = String(session.prefix(8))
        XCTAssertEqual(try harness.json("show", prefix)["id"] as? String, session)
        XCTAssertEqual(try harness.json("background", String(session.prefix(4)))["session"] as? String, session)
        XCTAssertEqual(try harness.json("send", prefix.uppercased(), "state")["result"] as? String, "performed", "case does not matter")
        XCTAssertEqual(try harness.refusal("show", String(session.prefix(3))).code, "unknownSession", "three characters are too few")
        XCTAssertEqual(harness.wmctl("sessions", "-q").stdout, session + "\n")
    }

    func testAnAmbiguousPrefixListsTheCandidates() throws {
        harness.stop(signal: SIGTERM)
        // Two stored sessions whose ids share their first 8 characters.
        do {
            // Closed (and its lock released) at the end of this block, before the broker starts.
            let store = try SessionStore(directory: harness.root + "/state")
            for (id, title) in [("abcdef12-0000-4000-8000-000000000001", "First"), ("abcdef12-0000-4000-8000-000000000002", "Second")] {
                let session = SceneSession(id: SessionID(id)!, appID: "notes", configuration: "Editor", role: "windowApplication", title: title)
                try awaitResult { try await store.insert(session) }
            }
        }
        try harness.start()
        let refusal = try harness.refusal("show", "abcdef12")
        XCTAssertEqual(refusal.code, "invalidRequest")
        XCTAssertTrue(refusal.message.contains("matches 2 sessions") && refusal.message.contains("(First)") && refusal.message.contains("(Second)"), refusal.message)
        XCTAssertEqual(try harness.json("show", "abcdef12-0000-4000-8000-000000000002")["title"] as? String, "Second")
    }

    func testSessionsComeInPagesSoThatNoReplyOutgrowsAFrame() throws {
        harness.stop(signal: SIGTERM)
        do {
            let store = try SessionStore(directory: harness.root + "/state")
            let title = String(repeating: "長", count: 256)  // the longest title, 768 bytes
            try awaitResult {
                for index in 0..<1_200 {
                    try await store.insert(SceneSession(appID: "archived", configuration: "Editor", role: "windowApplication", title: "\(index) " + title))
                }
            }
        }
        try harness.start()
        XCTAssertEqual(harness.wmctl("sessions", "-q").stdout.split(separator: "\n").count, 1_200, "every page fetched")
        XCTAssertEqual(try harness.jsonList("sessions").count, 1_200)
        let raw = try RawSocket(path: harness.socketPath)
        try raw.greet()
        try raw.write(frame: .with { $0.id = 7; $0.controlRequest = .with { $0.sessions = .init() } })
        let first = try XCTUnwrap(raw.readFrame())
        guard case .controlReply(let reply) = first.body, case .sessions(let page)? = reply.kind else { return XCTFail("\(first)") }
        XCTAssertEqual(page.sessions.count, 500)
        XCTAssertEqual(page.total, 1_200)
        XCTAssertEqual(page.nextOffset, 500)
    }

    func testTheSessionsTableFitsAHundredColumnsWithWideCharacters() throws {
        _ = try harness.openNote("emoji", title: "Packing 🧳 list")
        _ = try harness.openNote("cjk", title: String(repeating: "荷造りリスト", count: 20))
        let table = harness.wmctl("sessions").stdout
        let lines = table.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, table)
        XCTAssertTrue(lines.contains { $0.hasSuffix("Packing 🧳 list") }, "a title with an emoji is not cut short: \(table)")
        XCTAssertTrue(lines.contains { $0.hasSuffix("…") }, "a title too wide is cut: \(table)")
        for line in lines {
            // Columns: an emoji and a CJK character each take two.
            let columns = line.reduce(0) { $0 + (($1.unicodeScalars.first!.value >= 0x3000) ? 2 : 1) }
            XCTAssertLessThanOrEqual(columns, 100, line)
        }
        XCTAssertTrue(lines[1].hasPrefix(String(lines[1].prefix(8))) && lines[1].dropFirst(8).hasPrefix("  "), "8-character ids")
        XCTAssertEqual(harness.wmctl("sessions", "--no-trunc").stdout.split(separator: "\n")[1].split(separator: " ")[0].count, 36)
    }

    func testErrorsSayWhatToDo() throws {
        let unreachable = harness.wmctl(["--socket", harness.root + "/nowhere.sock", "status"], socket: false)
        XCTAssertEqual(unreachable.code, 3)
        XCTAssertEqual(unreachable.stderr, "wmctl: windowbrokerd is not running at \(harness.root)/nowhere.sock; start it with `windowbrokerd` or `systemctl --user start windowbroker.socket`\n")
        let typo = harness.wmctl("sesions")
        XCTAssertEqual(typo.code, 2)
        XCTAssertTrue(typo.stderr.contains("did you mean 'sessions'?"), typo.stderr)
        let json = harness.wmctl("--json", "stauts")
        XCTAssertEqual(json.code, 2)
        let object = try XCTUnwrap(try json.json() as? [String: Any], "a usage error is JSON with --json: \(json.stdout)")
        XCTAssertEqual((object["error"] as? [String: Any])?["code"] as? String, "usage")
        XCTAssertEqual(harness.wmctl("--json", "status", "--bogus").code, 2)
    }

    func testAScenesOutputIsItsOwnInTheLogAndInWmctlLogs() throws {
        let session = try harness.openNote("loud")
        let marker = "marker-\(UUID().uuidString.prefix(6))"
        _ = try harness.json("send", session, "print", "--arg", "text=\(marker)")
        try harness.eventually("both lines are kept for the session") {
            let texts = try harness.jsonList("logs", String(session.prefix(8))).compactMap { $0["text"] as? String }
            return texts.contains("stdout: \(marker)") && texts.contains("stderr: \(marker)")
        }
        let kept = try harness.jsonList("logs", session)
        XCTAssertEqual(kept.first { $0["text"] as? String == "stdout: \(marker)" }?["stream"] as? String, "stdout")
        XCTAssertEqual(kept.first { $0["text"] as? String == "stderr: \(marker)" }?["stream"] as? String, "stderr")
        let logged = harness.brokerLog.split(separator: "\n").filter { $0.contains("stderr: \(marker)") }
        XCTAssertEqual(logged.count, 1)
        XCTAssertTrue(logged.first?.contains(" warning ") == true && logged.first?.contains("STREAM=stderr") == true,
                      "stderr ranks above stdout: \(logged)")
        XCTAssertTrue(harness.brokerLog.split(separator: "\n").contains { $0.contains("stdout: \(marker)") && $0.contains(" info ") })

        // -f follows: a line printed after it started shows up, as with tail -f.
        let follower = try harness.start(wmctl: ["logs", session, "-n", "1", "-f"])
        defer { follower.stop() }
        // Printed after the follower showed what was there: a line printed before its first
        // answer is not "new", and -n 1 would show only the last of the two.
        try harness.eventually("the follower shows the last line kept") { follower.output.contains(marker) }
        _ = try harness.json("send", session, "print", "--arg", "text=later-\(marker)")
        try harness.eventually("the follower prints the new line") { follower.output.contains("stdout: later-\(marker)") }
        XCTAssertTrue(logged.first?.contains("session=\(session)") == true && logged.first?.contains("app=notes") == true, "\(logged)")
        // A crash's backtrace is the scene's too.
        _ = harness.wmctl("send", session, "crash")
        try harness.eventually("the backtrace is in the session's lines") {
            try harness.jsonList("logs", session, "-n", "500").contains { ($0["text"] as? String ?? "").contains("crashed") }
        }
        XCTAssertEqual(try harness.refusal("logs", UUID().uuidString).code, "unknownSession")
    }

    func testAConfigFileSetsFlagsAndTheCommandLineWins() throws {
        harness.stop(signal: SIGTERM)
        let directory = harness.root + "/config-home/windowbroker"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "# one scene process at most\nmax-workers = 1   # a comment\n\nrebuild-index = false\n"
            .write(toFile: directory + "/windowbrokerd.conf", atomically: true, encoding: .utf8)
        try harness.start()
        _ = try harness.openNote("only")
        XCTAssertEqual(try harness.refusal("open", "notes", "--new", "--title", "second").code, "resourceExhausted", "the file's max-workers")
        harness.stop(signal: SIGTERM)
        harness.extraArguments += ["--max-workers", "4"]
        try harness.start()
        _ = try harness.json("open", "notes", "--new", "--title", "second")
        _ = try harness.json("open", "notes", "--new", "--title", "third")

        // A mistake in the file is reported as the file's, with its line.
        try "max-workers = 1\nnot a setting\n".write(toFile: harness.root + "/bad.conf", atomically: true, encoding: .utf8)
        let bad = try harness.runDaemon(["--config", harness.root + "/bad.conf", "--state-dir", harness.root + "/other-state"])
        XCTAssertNotEqual(bad.code, 0)
        XCTAssertTrue(bad.output.contains("bad.conf:2"), bad.output)
    }

    /// A misspelt setting or a bad value in the file says the file, the line and what to write
    /// instead, with none of the command line's usage text (issue 66.7), and exits with EX_CONFIG,
    /// which the unit does not restart on.
    func testAConfigFileMistakeNamesItsLineAndTheSettingMeant() throws {
        harness.stop(signal: SIGTERM)
        func run(_ text: String) throws -> (code: Int32, output: String) {
            try text.write(toFile: harness.root + "/mistake.conf", atomically: true, encoding: .utf8)
            return try harness.runDaemon(["--config", harness.root + "/mistake.conf", "--state-dir", harness.root + "/other-state"])
        }
        let misspelt = try run("# settings\nmax-workers = 4\nmax-foregrund = 3\n")
        XCTAssertEqual(misspelt.code, 78, misspelt.output)
        XCTAssertTrue(misspelt.output.contains("mistake.conf:3: 'max-foregrund' is not a setting (did you mean 'max-foreground'?)"), misspelt.output)
        XCTAssertFalse(misspelt.output.contains("Usage:"), misspelt.output)

        let badNumber = try run("max-workers = many\n")
        XCTAssertEqual(badNumber.code, 78, badNumber.output)
        XCTAssertTrue(badNumber.output.contains("mistake.conf:1: max-workers = many: "), badNumber.output)
        XCTAssertTrue(badNumber.output.contains("'many'"), badNumber.output)
        XCTAssertFalse(badNumber.output.contains("--max-workers") || badNumber.output.contains("Usage:"), badNumber.output)

        let outOfRange = try run("\nstop-timeout = 0s\n")
        XCTAssertTrue(outOfRange.output.contains("mistake.conf:2: stop-timeout = 0s: 'stop-timeout' must be longer than zero"), outOfRange.output)
        let badLevel = try run("log-level = loud\n")
        XCTAssertTrue(badLevel.output.contains("mistake.conf:1: log-level = loud: 'log-level' takes trace, debug"), badLevel.output)

        let badSwitch = try run("rebuild-index = maybe\n")
        XCTAssertTrue(badSwitch.output.contains("mistake.conf:1: rebuild-index = maybe: 'rebuild-index' is a switch: true or false"), badSwitch.output)

        // The unit does not restart a broker whose configuration is wrong.
        let unit = try String(contentsOfFile: BrokerHarness.repository.appendingPathComponent("systemd/windowbroker.service.in").path, encoding: .utf8)
        XCTAssertTrue(unit.contains("RestartPreventExitStatus=78"))
        // On the command line the same mistake keeps the parser's words and its usage.
        let flag = try harness.runDaemon(["--max-foregrund", "3", "--state-dir", harness.root + "/other-state"])
        XCTAssertNotEqual(flag.code, 0)
        XCTAssertTrue(flag.output.contains("--max-foregrund"), flag.output)
    }

    /// The shipped example, every setting in it uncommented, is a configuration the broker
    /// runs with (issue 22: it named a flag that does not exist, and the daemon refused to start).
    func testTheExampleConfigurationWithEverySettingUncommentedStarts() throws {
        harness.stop(signal: SIGTERM)
        let example = try String(contentsOfFile: BrokerHarness.repository.appendingPathComponent("config/windowbrokerd.conf.example").path, encoding: .utf8)
        var settings = 0
        let uncommented = example.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            // "# key = value": a setting; "# words ...": a comment that stays.
            guard line.hasPrefix("# "), let equals = line.firstIndex(of: "="),
                  line[line.index(line.startIndex, offsetBy: 2)..<equals].trimmingCharacters(in: .whitespaces).allSatisfy({ $0.isLowercase || $0 == "-" })
            else { return String(line) }
            settings += 1
            return String(line.dropFirst(2))
        }.joined(separator: "\n")
        XCTAssertGreaterThan(settings, 8, "the example's settings were found")
        try uncommented.write(toFile: harness.root + "/example.conf", atomically: true, encoding: .utf8)
        harness.extraArguments += ["--config", harness.root + "/example.conf"]
        try harness.start()
        XCTAssertEqual(try harness.json("status")["pid"] as? Int, Int(harness.brokerPID))
    }

    func testBashCompletesLiveSessionIdsAndAppIds() throws {
        let session = try harness.openNote("completed")
        let wmctl = BrokerHarness.binDirectory + "/wmctl"
        func complete(_ line: String) throws -> [String] {
            // What bash does on TAB: the generated script, its completion function called with
            // the command, the current word and the previous one, COMPREPLY.
            let words = line.split(separator: " ", omittingEmptySubsequences: false).map { "'\($0)'" }.joined(separator: " ")
            let script = """
                source <("\(wmctl)" --generate-completion-script bash)
                COMP_WORDS=(\(words)); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
                _wmctl wmctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; printf '%s\\n' "${COMPREPLY[@]}"
                """
            let process = WaitableProcess()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", script]
            process.environment = harness.environment.merging(["PATH": BrokerHarness.binDirectory + ":/usr/bin:/bin"]) { _, new in new }
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return text.split(separator: "\n").map(String.init)
        }
        XCTAssertEqual(try complete("wmctl show \(session.prefix(3))"), [session])
        XCTAssertEqual(try complete("wmctl open no"), ["notes", "notes-single"])
        XCTAssertEqual(try complete("wmctl sess"), ["sessions"])
        // What each argument takes, from the broker where it is live (issue 22, section 4).
        XCTAssertEqual(try complete("wmctl open notes --activity no"), ["notes.edit", "notes.library"])
        XCTAssertEqual(try complete("wmctl sessions --app notes-"), ["notes-single"])
        XCTAssertEqual(try complete("wmctl watch --app notes-s"), ["notes-single"])
        XCTAssertEqual(try complete("wmctl watch --session \(session.prefix(3))"), [session])
        XCTAssertEqual(try complete("wmctl watch --event didBecome"), ["didBecomeActive", "didBecomeKey"])
        XCTAssertEqual(try complete("wmctl pressure simulate c"), ["critical"])
        XCTAssertEqual(try complete("wmctl defaults notes s"), ["set"])
        _ = try harness.json("defaults", "notes", "set", "toolbarHidden", "--json", "true")
        XCTAssertEqual(try complete("wmctl defaults notes get tool"), ["toolbarHidden"])
        // The key scene's shortcuts and command ids, as its menu has them.
        let shortcuts = try complete("wmctl key ctrl+")
        XCTAssertTrue(shortcuts.contains("ctrl+u"), "\(shortcuts)")
        XCTAssertEqual(try complete("wmctl menu invoke notes.ins"), ["notes.insertDate"])
        // The actions the session's app declares (its manifest's "actions").
        XCTAssertEqual(try complete("wmctl send \(session) ty"), ["type"])
        XCTAssertEqual(try complete("wmctl send \(session.prefix(8)) set-t"), ["set-text"])
    }

    /// Apps declare the actions their scenes take; wmctl lists them (issue 22, section 4).
    func testAppsDeclareTheirActionsAndWmctlListsThem() throws {
        let session = try harness.openNote("acting")
        let listed = harness.wmctl("actions", session)
        XCTAssertEqual(listed.code, 0, listed.stderr)
        XCTAssertTrue(listed.stdout.contains("type --arg text=...\n    Types text at the cursor; the note is saved and every window on it follows.\n"),
                      listed.stdout)
        XCTAssertEqual(harness.wmctl("actions", "--app", "notes").stdout, listed.stdout)
        let declined = harness.wmctl("send", session, "no-such-action")
        XCTAssertEqual(declined.code, 1)
        XCTAssertTrue(declined.stdout.contains("`wmctl actions \(session)` lists"), declined.stdout)
        XCTAssertEqual(harness.wmctl("actions").code, 2, "a session or --app")
        // Declared twice: the manifest is skipped, and wmctl apps says why.
        let manifest = harness.appsDirectory + "/twice.json"
        try JSONSerialization.data(withJSONObject: [
            "id": "twice", "executable": "/bin/true", "actions": [["name": "go"], ["name": "go"]],
        ]).write(to: URL(fileURLWithPath: manifest))
        kill(harness.brokerPID, SIGHUP)
        try harness.eventually("the manifest is refused") { harness.wmctl("apps").stdout.contains("actions[1].name': 'go' is declared twice") }
    }

    /// One rule for times (issue 22): people read local time with its offset, JSON has UTC.
    func testTimesAreLocalWithAnOffsetForPeopleAndUTCInJSON() throws {
        let session = try harness.openNote("timed")
        _ = try harness.json("send", session, "print", "--arg", "text=tick")
        func inTokyo(_ arguments: String...) -> String {
            harness.run("/usr/bin/env", ["TZ=Asia/Tokyo", BrokerHarness.binDirectory + "/wmctl", "--socket", harness.socketPath] + arguments).stdout
        }
        let local = #"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+09:00"#
        XCTAssertNotNil(inTokyo("show", session).range(of: "created +" + local, options: .regularExpression), inTokyo("show", session))
        try harness.eventually("the line is kept") { inTokyo("logs", session).contains("tick") }
        XCTAssertNotNil(inTokyo("logs", session).range(of: #"\d\d:\d\d:\d\d\.\d{3} \+09:00  \["#, options: .regularExpression), inTokyo("logs", session))
        let watch = try harness.subscribed(try harness.start("/usr/bin/env", [
            "TZ=Asia/Tokyo", BrokerHarness.binDirectory + "/wmctl", "--socket", harness.socketPath, "watch", "--count", "1"]))
        _ = try harness.json("background", session)
        XCTAssertEqual(watch.wait().code, 0)
        XCTAssertNotNil(watch.output.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \+09:00 "#, options: .regularExpression), watch.output)
        let json = try XCTUnwrap(try harness.jsonList("logs", session).first?["time"] as? String)
        XCTAssertTrue(json.hasSuffix("Z"), json)
    }

    /// `watch --recent N` starts with the newest N matching events from before it, oldest
    /// first, then goes on live.
    func testWatchCanStartWithTheLatestEvents() throws {
        let session = try harness.openNote("earlier", title: "Earlier")
        _ = try harness.json("background", session)
        let watched = harness.wmctl("--json", "watch", "--session", session, "--event", "didBecomeActive", "--event", "willResignActive",
                                    "--event", "didEnterBackground", "--recent", "2", "--count", "2")
        XCTAssertEqual(watched.code, 0, watched.stderr)
        let names = watched.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["event"] as? String
        }
        XCTAssertEqual(names, ["willResignActive", "didEnterBackground"], watched.stdout)
        let none = harness.wmctl("--json", "watch", "--event", "reclaimed", "--recent", "5", "--timeout", "0.3")
        XCTAssertEqual(none.stdout, "", "nothing was reclaimed")
    }

    func testTopShowsALiveViewAndQuitsOnQ() throws {
        let session = try harness.openNote("watched", title: "Top of the list")
        let once = harness.wmctl("top", "--once")
        XCTAssertEqual(once.code, 0, once.stderr)
        XCTAssertTrue(once.stdout.hasPrefix("windowbroker "), once.stdout)
        XCTAssertTrue(once.stdout.contains("pressure normal"), once.stdout)
        XCTAssertTrue(once.stdout.contains(String(session.prefix(8))) && once.stdout.contains("Top of the list"), once.stdout)
        XCTAssertFalse(once.stdout.contains("\u{1B}["), "--once writes no terminal codes")
        // The latest events too, as the live view shows them (66.9): the open's, which came before it.
        let events = once.stdout.components(separatedBy: "recent events\n").last ?? ""
        XCTAssertTrue(once.stdout.contains("recent events") && events.split(separator: "\n").contains { $0.contains("Top of the list") && $0.contains("didBecomeActive") }, once.stdout)

        // In a terminal (a pty from script(1)): it redraws, shows events as they happen, and q quits.
        let wmctl = BrokerHarness.binDirectory + "/wmctl"
        let output = harness.root + "/top.out"
        let started = try harness.start(wmctl: ["status"])  // warm: the binary is in the page cache
        _ = started.wait()
        let script = "(sleep 1.5; \"\(wmctl)\" open notes --new --title 'Arrived later' >/dev/null; sleep 1.5; printf q) | script -q -c '\"\(wmctl)\" top --interval 0.2' /dev/null > '\(output)'"
        let (code, text) = try runToCompletion("/bin/bash", ["-c", script], environment: harness.environment)
        XCTAssertEqual(code, 0, text)
        let screen = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        XCTAssertTrue(screen.contains("\u{1B}[H\u{1B}[2J"), "redrawn in place")
        XCTAssertTrue(screen.contains("Arrived later"), "a session that arrived while it ran")
        XCTAssertTrue(screen.contains("recent events") && screen.contains("didBecomeActive"), "events as they happen")
    }

    /// Runs async work from a synchronous test body.
    private func awaitResult(_ body: @escaping @Sendable () async throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: Error?
        Task {
            do { try await body() } catch { failure = error }
            done.signal()
        }
        done.wait()
        if let failure { throw failure }
    }
}

/// What a newcomer tripped on (issue 22, "things that fail or go missing without a word"):
/// every one of these now says what went wrong, with a non-zero exit.
final class SilentFailureTests: BrokerTestCase {
    func testStatusCountsOneSessionInTheSingular() throws {
        _ = try harness.openNote("single")
        let status = harness.wmctl("status")
        XCTAssertTrue(status.stdout.contains(": 1 session, 1 running, "), status.stdout)
    }

    /// A misspelt key leaves the app loaded and is said where the operator looks, with the key meant.
    func testAMisspeltManifestKeyIsAWarningInStatus() throws {
        try harness.install(app: "typo", manifest: [
            "name": "Typo", "executable": "/bin/true", "supportsMultipleScene": true, "activityTypes": ["notes.edit"],
        ])
        let warnings = try harness.json("status")["warnings"] as? [String] ?? []
        XCTAssertTrue(warnings.contains {
            $0.contains("typo.json") && $0.contains("'supportsMultipleScene'") && $0.contains("did you mean 'supportsMultipleScenes'?")
        }, "\(warnings)")
        // And where the apps are listed, beside the app it left loaded.
        let apps = harness.wmctl("apps")
        XCTAssertTrue(apps.stdout.contains("warning \(harness.appsDirectory)/typo.json: field 'supportsMultipleScene'"), apps.stdout)
        let json = harness.wmctl("--json", "apps")
        XCTAssertTrue(try XCTUnwrap(json.json() as? [[String: Any]]).contains { $0["id"] as? String == "typo" })
        XCTAssertTrue(json.stderr.contains("did you mean 'supportsMultipleScenes'?"), json.stderr)
    }

    func testNoAppsAndSkippedManifestsAreSaidInStatusAndApps() throws {
        try "{ \"id\": \"half\", \"name\": ".write(toFile: harness.appsDirectory + "/half.json", atomically: true, encoding: .utf8)
        kill(harness.brokerPID, SIGHUP)
        try harness.eventually("status counts the skipped manifest") {
            (try harness.json("status")["warnings"] as? [String] ?? []).contains { $0.contains("1 app manifest was skipped") }
        }
        let apps = harness.wmctl("apps")
        XCTAssertTrue(apps.stdout.contains("skipped \(harness.appsDirectory)/half.json"), apps.stdout)
        let json = harness.wmctl("--json", "apps")
        XCTAssertNoThrow(try json.json() as? [[String: Any]], "the list keeps its shape")
        XCTAssertTrue(json.stderr.contains("half.json"), json.stderr)

        // No app at all: said in the log and in status.
        for name in ["notes.json", "notes-single.json", "half.json"] { try FileManager.default.removeItem(atPath: harness.appsDirectory + "/" + name) }
        kill(harness.brokerPID, SIGHUP)
        try harness.eventually("status says there is no app") {
            (try harness.json("status")["warnings"] as? [String] ?? []).contains { $0.contains("no apps are installed") }
        }
        XCTAssertTrue(harness.brokerLog.contains("no apps are installed"))
        XCTAssertTrue(harness.wmctl("apps").stdout.contains("(no apps are installed)"))
    }

    func testAnUnknownAppInAFilterIsAnError() throws {
        XCTAssertEqual(try harness.refusal("sessions", "--app", "nosuch").code, "unknownApp")
        XCTAssertEqual(try harness.refusal("watch", "--app", "nosuch", "--count", "1").code, "unknownApp")
        XCTAssertEqual(harness.wmctl("sessions", "--app", "notes").code, 0, "an installed app with no sessions is fine")
    }

    func testDeclinedUnhandledAndNoMatchExitNonZero() throws {
        let session = try harness.openNote("exits")
        let declined = harness.wmctl("send", session, "no-such-action")
        XCTAssertEqual(declined.code, 1, declined.stdout)
        XCTAssertTrue(declined.stdout.hasPrefix("declined:"), declined.stdout)
        XCTAssertEqual(harness.wmctl("send", session, "state").code, 0)
        XCTAssertEqual(harness.wmctl("key", "ctrl+alt+f12").code, 1, "no command has it: unhandled")
        XCTAssertEqual(harness.wmctl("search", "zzzqqqnothing").code, 1, "no match, as grep")
    }

    func testPrettyMeansJSON() throws {
        let pretty = harness.wmctl("--pretty", "status")
        XCTAssertEqual(pretty.code, 0)
        let object = try XCTUnwrap(try pretty.json() as? [String: Any], pretty.stdout)
        XCTAssertNotNil(object["pid"])
        XCTAssertTrue(pretty.stdout.contains("\n  \""), "indented")
    }
}
