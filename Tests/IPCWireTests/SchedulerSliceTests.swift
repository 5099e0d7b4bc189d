import Foundation
import IPCWire
import XCTest

/// The short slice is the calling thread's alone: asked for on one thread, it leaves the
/// others as they were, the threads it starts later included. A kernel that reports no slice
/// (before 6.12) skips the check.
final class SchedulerSliceTests: XCTestCase {
    func testTheCallingThreadGetsTheShortSliceAndNoOtherThreadDoes() throws {
        let (before, accepted, after, started) = onNewThread {
            let before = SchedulerSlice.currentThread
            let accepted = SchedulerSlice.makeCurrentThreadInteractive()
            let started = onNewThread { SchedulerSlice.currentThread }
            return (before, accepted, SchedulerSlice.currentThread, started)
        }
        guard let before, before != SchedulerSlice.interactive else {
            throw XCTSkip("this kernel reports no scheduler slice (Linux 6.12 and later do)")
        }
        XCTAssertTrue(accepted)
        XCTAssertEqual(after, SchedulerSlice.interactive)
        XCTAssertEqual(started, before, "a thread started by a marked one starts with the default")
        XCTAssertEqual(onNewThread { SchedulerSlice.currentThread }, before, "a thread that asked for nothing")
    }
}

/// Runs `body` on a thread of its own and returns what it returned.
private func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = ResultBox<T>()
    Thread {
        result.value = body()
        done.signal()
    }.start()
    done.wait()
    return result.value!
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
