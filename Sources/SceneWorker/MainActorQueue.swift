import NIOCore

/// An in-order queue that the main actor fills and one main-actor task drains.
///
/// `AsyncStream` would do, but its iterator's `next()` is a nonisolated function: every call
/// moved from the main actor to the global executor and back (gdb: `swift_task_switch` into
/// `AsyncStream._Storage.next` with the generic executor). Here the wait starts on the main
/// actor. Its resumption still passes through the global executor, as every continuation's
/// does in Swift's runtime (gdb: `swift_task_enqueueGlobal` from `CheckedContinuation.resume`);
/// running that step on the main thread's loop instead (a task executor preference) measured
/// 0.3-0.4 ms slower per prewarmed open than a trip through Dispatch's pool, so it stays.
@MainActor
final class MainActorQueue<Element: Sendable> {
    private var items = CircularBuffer<Element>()
    private var finished = false
    private var waiter: CheckedContinuation<Element?, Never>?
    /// At most this many wait to be read; the oldest go first (nil: no limit).
    private let limit: Int?

    init(keepingNewest limit: Int? = nil) {
        self.limit = limit
    }

    /// Adds `element` after what is queued; ignored once finished.
    func yield(_ element: Element) {
        guard !finished else { return }
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: element)
            return
        }
        items.append(element)
        if let limit, items.count > limit { items.removeFirst() }
    }

    /// No more elements: the reader gets what is queued, then nil.
    func finish() {
        finished = true
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: nil)
        }
    }

    /// The next element, waiting for it; nil once finished and empty, or when the reading
    /// task is cancelled.
    func next() async -> Element? {
        if let element = items.popFirst() { return element }
        if finished || Task.isCancelled { return nil }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { waiter = $0 }
        } onCancel: {
            Task { @MainActor [weak self] in self?.stopWaiting() }
        }
    }

    /// The reader was cancelled: it stops waiting, with nil.
    private func stopWaiting() {
        guard let waiter else { return }
        self.waiter = nil
        waiter.resume(returning: nil)
    }
}

/// Values a scene hands its app in order, on the main actor, read with `for await`: the
/// updates it receives, a shared default's changes. Each wait starts on the reader's own actor
/// (an `AsyncStream`'s iterator waits in a nonisolated function, so every value cost a move to
/// the global executor and back on top of the resumption). The sequence ends when the scene
/// disconnects; a reader that falls more than its buffer behind loses the oldest values.
public struct MainActorStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = Never
    let queue: MainActorQueue<Element>

    /// The iterator; a sequence has one reader.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: queue) }

    /// Reads the stream's values in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let queue: MainActorQueue<Element>

        /// The next value; nil once the scene disconnected.
        public mutating func next() async -> Element? { await queue.next() }

        /// The next value, awaited on `actor` (the main actor, for a scene's delegate).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? { await queue.next() }
    }
}

/// Subscribers to a `MainActorStream`: a stream no one reads any more (its iterator is gone)
/// is dropped at the next value.
@MainActor
struct MainActorSubscribers<Element: Sendable> {
    private struct Weak {
        weak var queue: MainActorQueue<Element>?
    }

    private var subscribers: [Weak] = []
    private let bufferLimit: Int?

    init(keepingNewest limit: Int? = nil) {
        bufferLimit = limit
    }

    /// A new subscription: it gets every value sent from now on.
    mutating func subscribe() -> MainActorStream<Element> {
        let queue = MainActorQueue<Element>(keepingNewest: bufferLimit)
        subscribers.append(Weak(queue: queue))
        return MainActorStream(queue: queue)
    }

    mutating func send(_ element: Element) {
        subscribers.removeAll { $0.queue == nil }
        for subscriber in subscribers { subscriber.queue?.yield(element) }
    }

    /// Ends every subscription.
    mutating func finish() {
        for subscriber in subscribers { subscriber.queue?.finish() }
        subscribers.removeAll()
    }
}
