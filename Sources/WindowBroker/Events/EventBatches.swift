import IPCWire
import NIOCore
import Synchronization

/// Items for a follower of the broker's events that need not act on each event the moment it
/// happens: handed on in order, as a batch, once a short window has passed since the first of
/// them, or at once behind an item that must not wait (`mayBypass`).
///
/// An open emits about ten events within a few milliseconds. The followers woken for each of
/// them (the D-Bus face: a session's status, then a wake-up of its bus thread and of the bus
/// daemon; systemd's STATUS line) took CPU from the open they followed, on a machine with two.
/// In batches, that work comes once, after the open.
final class EventBatches<Item: Sendable>: AsyncSequence, Sendable {
    typealias Element = [Item]

    private struct Pending {
        var items: [Item] = []
        /// A batch was handed on and the follower has not asked for the next: it is acting on it.
        var following = false
    }

    private let pending = Mutex<Pending>(Pending())
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

    /// Adds `item`, handed on once the window its batch's first item opened has passed.
    func add(_ item: Item) {
        let first = pending.withLock { pending in
            pending.items.append(item)
            return pending.items.count == 1
        }
        if first { loop.scheduleTask(in: window) { [wake] in wake.yield() } }
    }

    /// Whether the caller may act on `item` itself, at once: nothing is pending and the
    /// follower is not acting on a batch, so nothing handed on before it can come after it.
    /// Otherwise it is added, to be handed on at once (a method's reply on the D-Bus face,
    /// which would otherwise wait for the follower's turn to find the queue empty).
    func mayBypass(_ item: Item) -> Bool {
        let bypass = pending.withLock { pending in
            guard !pending.items.isEmpty || pending.following else { return true }
            pending.items.append(item)
            return false
        }
        if !bypass { wake.yield() }
        return bypass
    }

    /// No more items: what is pending is handed on, then the sequence ends.
    func finish() {
        wake.finish()
    }

    /// Everything pending, the follower then acting on it when there was any.
    private func takeAll() -> [Item] {
        pending.withLock { pending in
            defer { pending.items.removeAll(keepingCapacity: true) }
            pending.following = !pending.items.isEmpty
            return pending.items
        }
    }

    /// The follower is done with its last batch.
    private func followed() {
        pending.withLock { $0.following = false }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(wakes: wakes.makeAsyncIterator(), batches: self)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var wakes: AsyncStream<Void>.AsyncIterator
        let batches: EventBatches

        mutating func next() async -> [Item]? {
            batches.followed()
            // A timer whose batch an item that could not bypass already took wakes to nothing.
            while await wakes.next() != nil {
                let batch = batches.takeAll()
                if !batch.isEmpty { return batch }
            }
            let rest = batches.takeAll()
            return rest.isEmpty ? nil : rest
        }
    }
}
