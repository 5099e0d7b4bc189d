import Foundation
import IPCWire
import Logging
import Synchronization
import XCTest

@testable import WindowBroker

/// `DescriptorWatch`, the thread that reads the broker's children's pipes and pidfds, under
/// the churn that libdispatch's read sources did not survive: descriptors made, watched and
/// ended from several threads at once. (The process-level tests cover what the broker does
/// with what it reads: `wmctl logs`, exits and crashes.)
final class DescriptorWatchTests: XCTestCase {
    private struct Seen {
        var bytes = 0
        var ends = 0
    }

    func testPipesWatchedFromManyThreadsAreEachReadToTheirEndOnceAndClosed() throws {
        let threads = 4
        let pipesPerThread = 500
        _ = DescriptorWatch.shared  // its own epoll set is not one of the pipes
        let before = openDescriptors()
        let seen = Mutex([Int: Seen]())
        let failures = Mutex([String]())
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<pipesPerThread {
                let id = thread * pipesPerThread + index
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else {
                    failures.withLock { $0.append("pipe: \(String(cString: strerror(errno)))") }
                    return
                }
                let (readEnd, writeEnd) = (ends[0], ends[1])
                // Non-blocking, as the broker's end of a worker's output pipe is.
                _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
                DescriptorWatch.shared.watch(readEnd) {
                    var buffer = [UInt8](repeating: 0, count: 64)
                    while true {
                        let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                        if count > 0 {
                            seen.withLock { $0[id, default: Seen()].bytes += count }
                            continue
                        }
                        if count < 0, errno == EAGAIN { return .again }
                        seen.withLock { $0[id, default: Seen()].ends += 1 }
                        return .done
                    }
                }
                let message = [UInt8](repeating: UInt8(ascii: "x"), count: id % 7 + 1)
                _ = message.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
                close(writeEnd)
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let total = threads * pipesPerThread
        let deadline = Date().addingTimeInterval(20)
        while seen.withLock({ $0.values.filter { $0.ends > 0 }.count }) < total, Date() < deadline {
            usleep(10_000)
        }
        let result = seen.withLock { $0 }
        XCTAssertEqual(result.count, total, "pipes read to their end")
        for id in 0..<total {
            XCTAssertEqual(result[id]?.bytes, id % 7 + 1, "pipe \(id): every byte written was read")
            XCTAssertEqual(result[id]?.ends, 1, "pipe \(id): its end was seen once")
        }
        // The watch closed every read end once it was done with it.
        while openDescriptors() > before, Date() < deadline { usleep(10_000) }
        XCTAssertLessThanOrEqual(openDescriptors(), before, "read ends left open")
    }

    /// One thread serves every worker's output and exit: a worker that writes without pause
    /// gets a bounded share of it at a time, and another one's exit is still reported.
    func testAWorkerThatWritesWithoutPauseDoesNotHoldUpAnotherOnesExit() throws {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        let output = WorkerOutput(logger: Logger(label: "flood") { _ in SwiftLogNoOpLogHandler() })
        output.follow(readEnd, stream: .stdout, pid: 999_999, session: nil, app: AppID("flood"))
        let stop = Atomic<Bool>(false)
        let writing = Atomic<Bool>(false)
        Thread.detachNewThread {
            let lines = [UInt8](repeating: UInt8(ascii: "\n"), count: 16384)
            while !stop.load(ordering: .relaxed) {
                _ = lines.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
                writing.store(true, ordering: .relaxed)
            }
            close(writeEnd)
        }
        defer { stop.store(true, ordering: .relaxed) }
        while !writing.load(ordering: .relaxed) { usleep(1_000) }
        usleep(50_000)  // the pipe is being read

        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        XCTAssertEqual(posix_spawn(&pid, "/bin/true", nil, nil, argv, environ), 0)
        let exit = Mutex<WorkerExit?>(nil)
        ExitWatcher.watch(pid: pid) { ended in exit.withLock { $0 = ended } }
        let deadline = Date().addingTimeInterval(10)
        while exit.withLock({ $0 }) == nil, Date() < deadline { usleep(10_000) }
        XCTAssertEqual(exit.withLock { $0 }, .exited(code: 0), "the exit of /bin/true, reported while another worker floods")
    }

    private func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }
}
