import NIOEmbedded
import Synchronization
import XCTest

@testable import WindowBroker

/// The batches the D-Bus face and systemd's STATUS line follow the broker's events in: handed
/// on in order, when the window the first item opened has passed (a testing loop's clock),
/// at once for an item that must not wait, and what is left when they finish.
final class EventBatchesTests: XCTestCase {
    func testABatchWaitsForItsWindowAndKeepsTheOrder() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let batches = EventBatches<Int>(window: .milliseconds(15), on: loop)
        let handed = Mutex<[[Int]]>([])
        let follower = Task {
            for await batch in batches { handed.withLock { $0.append(batch) } }
        }
        batches.add(1)
        batches.add(2)
        await loop.advanceTime(by: .milliseconds(14))
        batches.add(3)
        // The follower had time to take a batch, had one been handed on before its window.
        try await Task.sleep(for: .milliseconds(100))
        XCTAssertEqual(handed.withLock { $0 }, [])

        await loop.advanceTime(by: .milliseconds(1))
        try await waitUntil { handed.withLock { $0.count } == 1 }
        // The next item opens a window of its own.
        batches.add(4)
        await loop.advanceTime(by: .milliseconds(15))
        try await waitUntil { handed.withLock { $0.count } == 2 }
        XCTAssertEqual(handed.withLock { $0 }, [[1, 2, 3], [4]])
        batches.finish()
        await follower.value
        await loop.shutdownGracefully()
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertTrue(condition(), "not handed on within 5 s")
    }

    func testAnItemThatMustNotWaitTakesWhatCameBeforeIt() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let batches = EventBatches<String>(window: .seconds(60), on: loop)
        var iterator = batches.makeAsyncIterator()
        batches.add("created")
        _ = batches.mayBypass("reply")
        let handed = await iterator.next()
        XCTAssertEqual(handed, ["created", "reply"])

        // The first item's timer finds nothing left when it fires: the sequence waits for the
        // next batch instead of handing on an empty one.
        await loop.advanceTime(by: .seconds(60))
        _ = batches.mayBypass("later")
        let later = await iterator.next()
        XCTAssertEqual(later, ["later"])
        await loop.shutdownGracefully()
    }

    func testAnItemBypassesTheQueueOnlyWhenNothingCouldComeAfterIt() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let batches = EventBatches<String>(window: .seconds(60), on: loop)
        var iterator = batches.makeAsyncIterator()
        XCTAssertTrue(batches.mayBypass("reply 1"), "nothing pending, nothing being followed")

        batches.add("event")
        XCTAssertFalse(batches.mayBypass("reply 2"), "an event is pending: the reply goes after it")
        let handed = await iterator.next()
        XCTAssertEqual(handed, ["event", "reply 2"])
        // The follower is still acting on that batch until it asks for the next one.
        XCTAssertFalse(batches.mayBypass("reply 3"))
        let next = await iterator.next()
        XCTAssertEqual(next, ["reply 3"])
        batches.finish()
        let end = await iterator.next()
        XCTAssertNil(end)
        XCTAssertTrue(batches.mayBypass("reply 4"), "the follower asked for more: it is done with the last batch")
        await loop.shutdownGracefully()
    }

    func testFinishingHandsOnWhatIsPendingThenEnds() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let batches = EventBatches<Int>(window: .seconds(60), on: loop)
        var iterator = batches.makeAsyncIterator()
        batches.add(7)
        batches.finish()
        let rest = await iterator.next()
        XCTAssertEqual(rest, [7])
        let end = await iterator.next()
        XCTAssertNil(end)
        await loop.shutdownGracefully()
    }
}
