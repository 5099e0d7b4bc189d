import Foundation
import IPCWire
import XCTest

/// The broker's event loops run with the short scheduler slice (`SchedulerSlice`), and nothing
/// else does: not the broker's other threads (its main thread, the store's writer, the pools),
/// which would inherit it from a loop that started them if the kernel were not told otherwise,
/// and not its scenes, spawned or forked from a zygote. Read from /proc as the scheduler
/// reports it, on the real broker and real notes processes.
final class SchedulingTests: BrokerTestCase {
    /// What `/proc/PID/task/TID/sched` says of `se.slice`, by thread, with each thread's name.
    private func slices(of pid: Int32) throws -> [(tid: Int32, name: String, slice: UInt64?)] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap(Int32.init).sorted().map { tid in
            let task = "/proc/\(pid)/task/\(tid)"
            let name = (try? String(contentsOfFile: task + "/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            let sched = (try? String(contentsOfFile: task + "/sched", encoding: .utf8)) ?? ""
            let slice = sched.split(separator: "\n").first { $0.hasPrefix("se.slice") }
                .flatMap { $0.split(separator: ":").last }
                .flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
            return (tid, name, slice)
        }
    }

    func testOnlyTheBrokersEventLoopsRunWithTheShortSlice() throws {
        guard let ours = try slices(of: getpid()).first?.slice, ours != SchedulerSlice.interactive, kernelTakesSlices() else {
            throw XCTSkip("this kernel takes no slice a thread asks for, or reports none in /proc (Linux 6.12 and later do)")
        }
        try installZygoteNotes(in: harness, executable: try staticNotes())
        try harness.eventually("the zygote starts") { zygotePIDs(announcedIn: harness).count == 1 }
        let zygote = try XCTUnwrap(zygotePIDs(announcedIn: harness).first)
        harness.remember(pid: zygote)
        var scenes: [Int32] = []
        for (app, launch) in [("notes", "spawned"), ("znotes", "forked")] {
            let opened = try harness.json("open", app, "--activity", "notes.edit", "--info", "noteID=\(launch)")
            XCTAssertEqual(opened["launch"] as? String, launch)
            let session = try XCTUnwrap(opened["session"] as? String)
            scenes.append(Int32(try XCTUnwrap(harness.session(session)["pid"] as? Int)))
            harness.remember(pid: scenes.last!)
        }

        let broker = try slices(of: harness.brokerPID)
        let loops = broker.filter { $0.name.hasPrefix("NIO-SGLTN-") && !$0.name.hasPrefix("NIO-SGLTN-TP") }
        XCTAssertFalse(loops.isEmpty, "the broker's threads: \(broker)")
        for loop in loops {
            XCTAssertEqual(loop.slice, SchedulerSlice.interactive, "broker thread \(loop.name) (\(loop.tid))")
        }
        let others = broker.filter { thread in !loops.contains { $0.tid == thread.tid } }
        XCTAssertGreaterThan(others.count, 1, "the broker's threads: \(broker)")
        for thread in others {
            XCTAssertEqual(thread.slice, ours, "broker thread \(thread.name) (\(thread.tid))")
        }
        for process in [zygote] + scenes {
            for thread in try slices(of: process) {
                XCTAssertEqual(thread.slice, ours, "process \(process), thread \(thread.name) (\(thread.tid))")
            }
        }
    }
}

/// Whether a thread that asks for the short slice gets it (Linux 6.12 and later): asked on a
/// thread of its own, which ends with it.
private func kernelTakesSlices() -> Bool {
    let done = DispatchSemaphore(value: 0)
    let taken = Flag()
    Thread {
        if SchedulerSlice.makeCurrentThreadInteractive(), SchedulerSlice.currentThread == SchedulerSlice.interactive { taken.set() }
        done.signal()
    }.start()
    done.wait()
    return taken.isSet
}

/// Set on the thread, read after the semaphore it signals.
private final class Flag: @unchecked Sendable {
    private(set) var isSet = false
    func set() { isSet = true }
}
