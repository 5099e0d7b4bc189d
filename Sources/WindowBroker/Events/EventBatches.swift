import IPCWire
import NIOCore
import Synchronization

/// Items for a follower of the broker's events that need not act on each event the moment it
/// happens: handed on in order, as a batch, once a short window has passed since the first of
/// them, or at once when an item must not wait.
///
/// An open emits about ten events within a few milliseconds. The followers woken for each of
/// them (the D-Bus face: a session's status, then a wake-up of its bus thread and of the bus
/// daemon; systemd's STATUS line) took CPU from the open they followed, on a machine with two.
/// In batches, that work comes once, after the open.
final class EventBatches<Item: Sendable>: AsyncSequence, Sendable {
    typealias Element = [Item]

    private let pending = Mutex<[Item]>([])
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let window: TimeAmount
    private let loop: any EventLoop

    /// Batches handed on `window` after their first item; the timer runs on `loop`.
    init(window: Duration, on loop: any EventLoop) {
        // One wake-up stands for any number: each takes everything pending.
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.window = .nanoseconds(window.nanoseconds)
        self.loop = loop
    }

    /// Adds `item`. With `now`, the batch is handed on at once, with everything before it.
    func add(_ item: Item, now: Bool = false) {
        let first = pending.withLock { pending in
            pending.append(item)
            return pending.count == 1
        }
        if now {
            wake.yield()
        } else if first {
            loop.scheduleTask(in: window) { [wake] in wake.yield() }
        }
    }

    /// No more items: what is pending is handed on, then the sequence ends.
    func finish() {
        wake.finish()
    }

    private func takeAll() -> [Item] {
        pending.withLock { pending in
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(wakes: wakes.makeAsyncIterator(), batches: self)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var wakes: AsyncStream<Void>.AsyncIterator
        let batches: EventBatches

        mutating func next() async -> [Item]? {
            // A timer whose batch a `now` item already took wakes to nothing: wait on.
            while await wakes.next() != nil {
                let batch = batches.takeAll()
                if !batch.isEmpty { return batch }
            }
            let rest = batches.takeAll()
            return rest.isEmpty ? nil : rest
        }
    }
}
