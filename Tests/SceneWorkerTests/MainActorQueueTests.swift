@testable import SceneWorker
import XCTest

/// The queue behind `Scene.updates`, `SharedDefaults.changes(for:)` and the keys typed into a
/// window: in order, and a reader that falls behind a bounded queue loses the oldest.
@MainActor
final class MainActorQueueTests: XCTestCase {
    func testABoundedQueueKeepsTheNewestInOrderAndEndsAfterThem() async {
        let queue = MainActorQueue<Int>(keepingNewest: 3)
        for value in 1...10 { queue.yield(value) }
        queue.finish()
        queue.yield(11)  // after the end: ignored
        var read: [Int] = []
        while let value = await queue.next() { read.append(value) }
        XCTAssertEqual(read, [8, 9, 10])
    }

    func testAWaitingReaderGetsTheNextValueAndNilAtTheEnd() async {
        let queue = MainActorQueue<String>()
        let reader = Task { @MainActor in [await queue.next(), await queue.next()] }
        await Task.yield()
        queue.yield("first")
        await Task.yield()
        queue.finish()
        let read = await reader.value
        XCTAssertEqual(read, ["first", nil])
    }
}
