import Foundation
import XCTest
import IPCWire

@testable import WindowBroker

/// A budget with real allocations: background scenes are reclaimed oldest first after saving,
/// the foreground never, and every reclaimed scene comes back exactly.
final class MemoryBudgetTests: BrokerTestCase {
    // A generous worker deadline: on a loaded machine a slow save must not turn into a timeout kill.
    override var brokerArguments: [String] { ["--memory-budget", "200M", "--pressure-interval", "0.2", "--mem-available-floor", "0", "--worker-timeout", "15"] }

    func testOldestBackgroundScenesAreReclaimedUntilUnderBudgetAndRestoreExactly() throws {
        var order: [String] = []
        for i in 1...5 {
            let session = try harness.openNote("n\(i)")
            try harness.type(session, "note number \(i)")
            _ = try harness.json("send", session, "move-cursor", "--arg", "position=\(i)")
            _ = try harness.json("send", session, "allocate", "--arg", "megabytes=60")
            if i < 5 { _ = try harness.json("background", session) }
            order.append(session)
        }
        let foreground = order[4]
        let foregroundPID = try harness.noteState(foreground).pid
        // Reclaim stops at the budget minus its 10 % margin. Only a sample taken after every
        // running scene's allocation (each one's 60 MiB counted) tells whether the reclaiming
        // is over: a sample that caught one of them before its allocation shows a total under
        // the target that the next sample does not. The scenes are read before the total, so
        // the total comes from the same sample or a later one (memory here only grows).
        try harness.eventually("workers are back under the 200 MiB budget minus its margin") {
            let running = try order.map { try harness.session($0) }.filter { $0["pid"] is Int }
            let allSampled = running.allSatisfy { ($0["pss"] as? Int ?? 0) >= 60 << 20 }
            let pressure = try harness.json("pressure")
            return allSampled && (pressure["workersPss"] as? Int ?? .max) <= 180 << 20
        }
        // Five more readings: once under the target, nothing else is reclaimed.
        let settled = try harness.json("pressure")
        func describe() throws -> String {
            try order.map { id in
                let session = try harness.session(id)
                return "\(session["state"] ?? "-") pid=\(session["pid"] ?? "-") pss=\((session["pss"] as? Int ?? 0) >> 20)MiB \(session["lastDisconnect"] ?? "")"
            }.joined(separator: "; ")
        }
        let settledSessions = try describe()
        let settledSamples = try XCTUnwrap(settled["samples"] as? Int)
        try harness.eventually("five more readings") { (try harness.json("pressure")["samples"] as? Int ?? 0) >= settledSamples + 5 }
        let nowSessions = try describe()
        XCTAssertEqual((try harness.json("pressure")["reclaimed"] as? [String: Any])?["count"] as? Int,
                       (settled["reclaimed"] as? [String: Any])?["count"] as? Int,
                       "settled: \(settled) \(settledSessions)\nnow: \(nowSessions)\n\(harness.brokerLog.split(separator: "\n").filter { $0.contains("reclaim") || $0.contains("pressure") }.joined(separator: "\n"))")

        let reclaimed = try order.filter { try harness.session($0)["lastDisconnect"] as? String == "memoryPressure" }
        XCTAssertFalse(reclaimed.isEmpty)
        XCTAssertEqual(reclaimed, Array(order.prefix(reclaimed.count)), "least recently used first")
        XCTAssertFalse(reclaimed.contains(foreground))
        XCTAssertEqual(try harness.noteState(foreground).pid, foregroundPID, "the foreground scene is never reclaimed")
        for session in reclaimed {
            XCTAssertEqual(try harness.state(session), "unattached")
            XCTAssertEqual(try harness.session(session)["hasRestoration"] as? Bool, true)
        }
        let pressure = try harness.json("pressure")
        let counters = try XCTUnwrap(pressure["reclaimed"] as? [String: Any])
        XCTAssertEqual(counters["count"] as? Int, reclaimed.count, "\((try? harness.jsonList("sessions")) ?? [])\n\(harness.brokerLog.split(separator: "\n").filter { $0.contains("reclaim") }.joined(separator: "\n"))")
        XCTAssertGreaterThan(counters["bytes"] as? Int ?? 0, reclaimed.count * (60 << 20))

        for session in reclaimed {
            _ = try harness.json("activate", session)
            let note = try harness.noteState(session)
            let index = order.firstIndex(of: session)! + 1
            XCTAssertEqual(note.text, "note number \(index)")
            XCTAssertEqual(note.cursor, index)
            XCTAssertEqual(note.callbacks, ["didFinishLaunching", "willConnect", "restoreInteractionState", "willEnterForeground", "didBecomeActive"])
        }
    }
}

final class ForegroundOverBudgetTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--memory-budget", "100M", "--pressure-interval", "0.2", "--mem-available-floor", "0"] }

    func testANewActivationFailsWithAResourceErrorAndNothingIsKilled() throws {
        let big = try harness.openNote("big")
        _ = try harness.json("send", big, "allocate", "--arg", "megabytes=120")
        let pid = try harness.noteState(big).pid
        try harness.eventually("the broker has sampled the allocation") {
            (try harness.json("pressure")["workersPss"] as? Int ?? 0) > 100 << 20
        }
        let refused = try harness.refusal("open", "notes", "--activity", "notes.edit")
        XCTAssertEqual(refused.code, "resourceExhausted")
        XCTAssertTrue(refused.message.contains("foreground"), refused.message)
        XCTAssertEqual(try harness.jsonList("sessions").count, 1, "no session was created")
        XCTAssertEqual(try harness.noteState(big).pid, pid)
        XCTAssertEqual(try harness.state(big), "foregroundActive")
    }
}

/// The kernel's PSI format, fed from a file: warning, then critical, then back to normal.
final class PSIFileTests: BrokerTestCase {
    var psiPath: String { harness.root + "/pressure-memory" }

    override func setUpWithError() throws {
        harness = try BrokerHarness(arguments: [])
        try write(some: 0, full: 0)
        harness.extraArguments = ["--psi-path", psiPath, "--pressure-interval", "0.1", "--pressure-cooldown", "1", "--mem-available-floor", "0"]
        try harness.start()
    }

    func write(some: Double, full: Double) throws {
        let text = String(format: "some avg10=%.2f avg60=%.2f avg300=%.2f total=%d\nfull avg10=%.2f avg60=%.2f avg300=%.2f total=%d\n",
                          some, some / 2, some / 4, Int(some * 100_000), full, full / 2, full / 4, Int(full * 100_000))
        try text.write(toFile: psiPath, atomically: true, encoding: .utf8)
    }

    func level() throws -> String { try harness.json("pressure")["level"] as? String ?? "" }

    func testWarningThenCriticalThenNormalWithHysteresis() throws {
        let background = try harness.openNote("bg")
        _ = try harness.json("send", background, "fill-cache", "--arg", "megabytes=20")
        _ = try harness.json("background", background)
        let foreground = try harness.openNote("fg")
        XCTAssertEqual(try level(), "normal")

        try write(some: 20, full: 2)
        try harness.eventually("warning") { try level() == "warning" }
        try harness.eventually("the background scene got its memory warning") {
            try harness.noteState(background).callbacks.contains("didReceiveMemoryWarning")
        }
        XCTAssertFalse(try harness.noteState(foreground).callbacks.contains("didReceiveMemoryWarning"), "foreground scenes are not warned")
        XCTAssertNotEqual(try harness.state(background), "unattached", "no reclaim at warning")

        try write(some: 55, full: 10)
        try harness.eventually("critical reclaims the background scene") {
            try harness.session(background)["lastDisconnect"] as? String == "memoryPressure"
        }
        XCTAssertEqual(try level(), "critical")
        XCTAssertEqual(try harness.state(foreground), "foregroundActive", "foreground scenes are never reclaimed")
        try harness.eventually("systemd's STATUS= shows the level") {
            harness.notify.messages.contains { $0.assignments.contains { $0.hasPrefix("STATUS=") && $0.hasSuffix("pressure critical") } }
        }

        // Below the warning bar but above its exit bar: the level steps down to warning, no further.
        try write(some: 5, full: 0)
        try harness.eventually("critical steps down to warning after the cool-down") { try level() == "warning" }
        // Fifteen readings, one every 0.1 s (a file takes no trigger, and nothing launches): they
        // span more than the 1 s cool-down, so a level that could step down would have.
        let steppedDown = try XCTUnwrap(try harness.json("pressure")["samples"] as? Int)
        try harness.eventually("fifteen more readings") { (try harness.json("pressure")["samples"] as? Int ?? 0) >= steppedDown + 15 }
        XCTAssertEqual(try level(), "warning", "hysteresis holds while PSI stays above the exit bar")

        try write(some: 0, full: 0)
        try harness.eventually("back to normal") { try level() == "normal" }
        let shown = try harness.json("pressure")
        XCTAssertEqual((shown["psi"] as? [String: Any])?["someAvg10"] as? Double, 0)
        XCTAssertTrue(((shown["psi"] as? [String: Any])?["source"] as? String ?? "").hasPrefix("poll "), "a regular file takes no trigger")
    }
}

/// A scene that hangs when asked for its state during a reclaim: the last committed activity
/// is kept, the worker is killed after the deadline, the reply says so; nothing else changes.
final class HangingReclaimTests: BrokerTestCase {
    override var brokerArguments: [String] { ["--worker-timeout", "1", "--pressure-interval", "0.2", "--mem-available-floor", "0"] }

    func testHangingSceneIsKilledAndItsLastCommittedStateKept() throws {
        let hanging = try harness.openNote("hanging")
        try harness.type(hanging, "committed")
        _ = try harness.json("background", hanging)
        _ = try harness.json("send", hanging, "hang-on-save")
        let hangingPID = try harness.noteState(hanging).pid
        let healthy = try harness.openNote("healthy")
        try harness.type(healthy, "fresh")
        _ = try harness.json("background", healthy)
        let foreground = try harness.openNote("front")
        let foregroundPID = try harness.noteState(foreground).pid

        let response = try harness.json("pressure", "simulate", "critical")
        let reclaimed = try XCTUnwrap(response["reclaimed"] as? [[String: Any]])
        XCTAssertEqual(reclaimed.compactMap { $0["session"] as? String }, [hanging, healthy], "least recently used first")
        let hangingDetail = reclaimed.first?["detail"] as? String ?? ""
        XCTAssertTrue(hangingDetail.contains("last committed restoration activity is kept"), hangingDetail)
        XCTAssertFalse(processExists(hangingPID))
        XCTAssertEqual(try harness.session(hanging)["lastDisconnect"] as? String, "timedOut")
        XCTAssertEqual(try harness.session(healthy)["lastDisconnect"] as? String, "memoryPressure")
        XCTAssertEqual(try harness.noteState(foreground).pid, foregroundPID)

        _ = try harness.json("activate", hanging)
        XCTAssertEqual(try harness.noteState(hanging).text, "committed")
        _ = try harness.json("activate", healthy)
        XCTAssertEqual(try harness.noteState(healthy).text, "fresh")
    }

    func testSimulatedWarningReachesOnlyBackgroundScenesAndReportsFreedBytes() throws {
        let background = try harness.openNote("cached")
        _ = try harness.json("send", background, "fill-cache", "--arg", "megabytes=16")
        _ = try harness.json("background", background)
        let foreground = try harness.openNote("front")
        let response = try harness.json("pressure", "simulate", "warning")
        let warned = try XCTUnwrap(response["warned"] as? [[String: Any]])
        XCTAssertEqual(warned.compactMap { $0["session"] as? String }, [background])
        XCTAssertEqual(warned.first?["freedBytes"] as? Int, 16 << 20)
        XCTAssertEqual((response["reclaimed"] as? [Any])?.count, 0)
        XCTAssertFalse(try harness.noteState(foreground).callbacks.contains("didReceiveMemoryWarning"))
    }
}

/// A launch asks the monitor for a reading of its own, shortly after the open (not during it,
/// where reading every worker's `/proc` files competed with the open for the CPU).
final class LaunchReadingTests: BrokerTestCase {
    // An interval no test waits for: only the reading at start and the launches' readings come.
    override var brokerArguments: [String] { ["--pressure-interval", "300", "--mem-available-floor", "0"] }

    func testANewScenesMemoryIsReadSoonAfterItsLaunchNotAtTheNextInterval() throws {
        let note = try harness.openNote("measured")
        try harness.eventually("the new scene's PSS is read", timeout: 10) {
            ((try harness.session(note)["pss"] as? Int) ?? 0) > 0
        }
    }
}

final class PressurePolicyTests: XCTestCase {
    private func psi(_ some: Double, _ full: Double = 0) -> PSIReading {
        PSIReading(some: .init(avg10: some, avg60: 0, avg300: 0, total: 0), full: .init(avg10: full, avg60: 0, avg300: 0, total: 0))
    }

    private func inputs(some: Double = 0, full: Double = 0, available: UInt64 = 8 << 30, pss: UInt64 = 0, budget: UInt64? = nil) -> PressureInputs {
        PressureInputs(psi: psi(some, full), memInfo: MemInfo(total: 16 << 30, available: available), workersPSS: pss, budget: budget)
    }

    func testEachInputRaisesTheLevel() {
        let policy = PressurePolicy()
        XCTAssertEqual(policy.rawLevel(inputs()).0, .normal)
        XCTAssertEqual(policy.rawLevel(inputs(some: 7)).0, .warning)
        XCTAssertEqual(policy.rawLevel(inputs(some: 40)).0, .critical)
        XCTAssertEqual(policy.rawLevel(inputs(some: 10, full: 70)).0, .critical)
        XCTAssertEqual(policy.rawLevel(inputs(available: 100 << 20)).0, .warning)
        XCTAssertEqual(policy.rawLevel(inputs(available: 32 << 20)).0, .critical)
        XCTAssertEqual(policy.rawLevel(inputs(pss: 95, budget: 100)).0, .warning)
        XCTAssertEqual(policy.rawLevel(inputs(pss: 101, budget: 100)).0, .critical)
    }

    func testRisesAtOnceAndStepsDownOneLevelPerCoolDownBelowTheExitBar() {
        var thresholds = PressureThresholds()
        thresholds.coolDown = .seconds(3)
        var policy = PressurePolicy(thresholds: thresholds)
        let t0 = ContinuousClock.now
        XCTAssertEqual(policy.update(inputs(some: 50), now: t0).level, .critical)
        // 5 % is under the warning bar (7) but over its exit bar (3.5): at most down to warning.
        XCTAssertEqual(policy.update(inputs(some: 5), now: t0 + .seconds(1)).level, .critical)
        XCTAssertEqual(policy.update(inputs(some: 5), now: t0 + .seconds(5)).level, .warning)
        XCTAssertEqual(policy.update(inputs(some: 5), now: t0 + .seconds(20)).level, .warning)
        XCTAssertEqual(policy.update(inputs(some: 1), now: t0 + .seconds(21)).level, .warning)
        XCTAssertEqual(policy.update(inputs(some: 1), now: t0 + .seconds(25)).level, .normal)
        XCTAssertEqual(policy.update(inputs(some: 8), now: t0 + .seconds(26)).level, .warning, "rising needs no cool-down")
    }

    func testParsesTheKernelFormatAndTheRealFile() throws {
        let sample = "some avg10=1.23 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.40 avg60=0.20 avg300=0.05 total=65432\n"
        let parsed = try XCTUnwrap(PSIReading.parse(Array(sample.utf8)))
        XCTAssertEqual(parsed.some, .init(avg10: 1.23, avg60: 0.5, avg300: 0.1, total: 123456))
        XCTAssertEqual(parsed.full?.total, 65432)
        XCTAssertNil(PSIReading.parse(Array("garbage".utf8)))
        XCTAssertNil(PSIReading.parse(Array("some avg10=1.23 avg60=0.50 avg300=0.10\n".utf8)), "no total")
        if let real = ProcFile.read("/proc/pressure/memory") {
            XCTAssertNotNil(PSIReading.parse(real), String(decoding: real, as: UTF8.self))
        }
        XCTAssertEqual(MemInfo.parse(Array("MemTotal:       16384 kB\nMemFree:  1 kB\nMemAvailable:    8192 kB\nBuffers: 2 kB\n".utf8)),
                       MemInfo(total: 16384 * 1024, available: 8192 * 1024))
        XCTAssertNil(MemInfo.parse(Array("MemTotal:       16384 kB\nMemFree:  1 kB\n".utf8)), "no MemAvailable (kernels before 3.14)")
        XCTAssertNil(MemInfo.parse(Array("MemTotal: 16x84 kB\nMemAvailable: 8192 kB\n".utf8)), "not a number")
        XCTAssertNil(MemInfo.parse(Array("MemTotal: 99999999999999999999 kB\nMemAvailable: 8192 kB\n".utf8)), "too large")
        let meminfo = try XCTUnwrap(MemInfo.parse(try XCTUnwrap(ProcFile.read("/proc/meminfo"))))
        XCTAssertGreaterThan(meminfo.total, 0)
        XCTAssertLessThanOrEqual(meminfo.available, meminfo.total)
        XCTAssertEqual(ProcessMemory.parsePSS(Array("Rss:   2048 kB\nPss:   1536 kB\nPss_Dirty: 512 kB\n".utf8)), 1536 * 1024)
        XCTAssertNil(ProcessMemory.parsePSS(Array("Rss:   2048 kB\n".utf8)))
        let ownPSS = try XCTUnwrap(ProcessMemory.pss(of: getpid()))
        XCTAssertGreaterThan(ownPSS, 1 << 20)
        XCTAssertNil(ProcessMemory.pss(of: 999_999_999))
    }

    func testProcessActivityCountsThePagesATouchOfNewMemoryFaultsIn() throws {
        let odd = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 500 0 7 0 30 12 0 0 20 0 1 0 100 4096 321 18446744073709551615\n"
        XCTAssertEqual(ProcessActivity.parse(Array(odd.utf8)), ProcessActivity(minorFaults: 500, majorFaults: 7, cpuTicks: 42, residentPages: 321))
        XCTAssertNil(ProcessActivity.parse(Array("1234 (short) S 1".utf8)))
        XCTAssertNil(ProcessActivity.parse(Array(odd.replacingOccurrences(of: " 500 ", with: " 5x0 ").utf8)))
        XCTAssertNil(ProcessActivity.of(999_999_999))
        let before = try XCTUnwrap(ProcessActivity.of(getpid()))
        // 8 MiB touched page by page: each page is a fault the kernel counts.
        let bytes = 8 << 20
        let memory = try XCTUnwrap(mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        defer { munmap(memory, bytes) }
        for page in stride(from: 0, to: bytes, by: 4096) { memory.storeBytes(of: 1, toByteOffset: page, as: UInt8.self) }
        let after = try XCTUnwrap(ProcessActivity.of(getpid()))
        XCTAssertGreaterThanOrEqual(after.minorFaults - before.minorFaults, UInt64(bytes / 4096 / 2), "huge pages may halve the count, no more")
        XCTAssertGreaterThan(after.residentPages, before.residentPages)
        // Given back without a fault: the resident count is what shows it.
        madvise(memory, bytes, MADV_DONTNEED)
        let released = try XCTUnwrap(ProcessActivity.of(getpid()))
        XCTAssertLessThan(released.residentPages, after.residentPages)
    }
}

final class PSSSamplerTests: XCTestCase {
    private let a = SessionID(), b = SessionID()

    func testAnUnchangedWorkerKeepsItsReadingUntilItAgesOutAndAChangedOneIsReadAgain() {
        var sampler = PSSSampler(maxAge: .seconds(10))
        var activity: [pid_t: ProcessActivity] = [1: .init(minorFaults: 10, majorFaults: 0, cpuTicks: 5, residentPages: 100), 2: .init(minorFaults: 20, majorFaults: 0, cpuTicks: 5, residentPages: 200)]
        var pss: [pid_t: UInt64] = [1: 100, 2: 200]
        var reads: [pid_t] = []
        func sample(_ now: ContinuousClock.Instant, scope: SampleScope = .changed, _ pids: [SessionID: pid_t]? = nil) -> [SessionID: UInt64] {
            sampler.sample(pids ?? [a: 1, b: 2], now: now, scope: scope, activity: { activity[$0] }, pss: { reads.append($0); return pss[$0] })
        }
        let t0 = ContinuousClock.now
        XCTAssertEqual(sample(t0), [a: 100, b: 200])
        XCTAssertEqual(reads.sorted(), [1, 2])

        reads = []
        pss = [1: 150, 2: 250]
        activity[2]!.minorFaults += 1
        XCTAssertEqual(sample(t0 + .seconds(1)), [a: 100, b: 250], "only the worker that faulted is read again")
        XCTAssertEqual(reads, [2])

        reads = []
        activity[1]!.cpuTicks += 1
        XCTAssertEqual(sample(t0 + .seconds(2)), [a: 150, b: 250], "running counts as activity")
        XCTAssertEqual(reads, [1])

        reads = []
        pss[2] = 180
        activity[2]!.residentPages -= 20
        XCTAssertEqual(sample(t0 + .seconds(2.5)), [a: 150, b: 180], "memory given back shows in the resident count")
        XCTAssertEqual(reads, [2])

        reads = []
        pss[2] = 250
        activity[2]!.residentPages += 20
        XCTAssertEqual(sample(t0 + .seconds(2.8)), [a: 150, b: 250])
        XCTAssertEqual(reads, [2])

        reads = []
        XCTAssertEqual(sample(t0 + .seconds(3)), [a: 150, b: 250])
        XCTAssertEqual(reads, [])
        XCTAssertEqual(sample(t0 + .seconds(3), scope: .everything), [a: 150, b: 250])
        XCTAssertEqual(reads.sorted(), [1, 2], "under pressure every worker is read")

        reads = []
        pss[1] = 90
        XCTAssertEqual(sample(t0 + .seconds(13)), [a: 90, b: 250], "a reading older than maxAge is taken again")
        XCTAssertEqual(reads.sorted(), [1, 2])
    }

    func testANewProcessForTheSameSessionAndAGoneWorkerAreNotCarriedOver() {
        var sampler = PSSSampler(maxAge: .seconds(10))
        let same = ProcessActivity(minorFaults: 10, majorFaults: 0, cpuTicks: 5, residentPages: 100)
        var reads: [pid_t] = []
        let t0 = ContinuousClock.now
        _ = sampler.sample([a: 1, b: 2], now: t0, scope: .changed, activity: { _ in same }, pss: { reads.append($0); return 100 })
        reads = []
        // a's worker restarted as pid 3 (with, by chance, the same counts); b's went away.
        XCTAssertEqual(sampler.sample([a: 3], now: t0 + .seconds(1), scope: .changed, activity: { _ in same }, pss: { reads.append($0); return 70 }), [a: 70])
        XCTAssertEqual(reads, [3])
        reads = []
        XCTAssertEqual(sampler.sample([a: 3, b: 2], now: t0 + .seconds(2), scope: .changed, activity: { _ in same }, pss: { reads.append($0); return 80 }), [a: 70, b: 80])
        XCTAssertEqual(reads, [2], "a worker dropped from one sample is read afresh when it shows up again")
        // A process that cannot be read (gone between the list and the reading) is left out.
        XCTAssertEqual(sampler.sample([a: 3, b: 2], now: t0 + .seconds(3), scope: .changed, activity: { $0 == 2 ? nil : same }, pss: { _ in 1 }), [a: 70])
    }

    func testALaunchsReadingReadsOnlyTheWorkersWithNoReadingYet() {
        var sampler = PSSSampler(maxAge: .seconds(10))
        let c = SessionID()
        var activity: [pid_t: ProcessActivity] = [1: .init(minorFaults: 10, majorFaults: 0, cpuTicks: 5, residentPages: 100), 2: .init(minorFaults: 20, majorFaults: 0, cpuTicks: 5, residentPages: 200)]
        var checked: [pid_t] = [], reads: [pid_t] = []
        func sample(_ pids: [SessionID: pid_t], _ now: ContinuousClock.Instant, _ scope: SampleScope) -> [SessionID: UInt64] {
            sampler.sample(pids, now: now, scope: scope, activity: { checked.append($0); return activity[$0] ?? .init(minorFaults: 0, majorFaults: 0, cpuTicks: 0, residentPages: 1) },
                           pss: { reads.append($0); return UInt64($0) * 100 })
        }
        let t0 = ContinuousClock.now
        XCTAssertEqual(sample([a: 1, b: 2], t0, .changed), [a: 100, b: 200])
        checked = []; reads = []
        activity[1]!.minorFaults += 5
        XCTAssertEqual(sample([a: 1, b: 2, c: 3], t0 + .seconds(1), .newcomers), [a: 100, b: 200, c: 300])
        XCTAssertEqual(checked, [3], "the known workers' /proc files are not read")
        XCTAssertEqual(reads, [3])
        checked = []; reads = []
        // b's session got a new process; a's worker went away.
        XCTAssertEqual(sample([b: 4, c: 3], t0 + .seconds(2), .newcomers), [b: 400, c: 300])
        XCTAssertEqual(reads, [4])
        checked = []; reads = []
        XCTAssertEqual(sample([b: 4, c: 3], t0 + .seconds(3), .changed).count, 2)
        XCTAssertEqual(checked.sorted(), [3, 4], "the next interval's reading checks them all again")
    }
}
