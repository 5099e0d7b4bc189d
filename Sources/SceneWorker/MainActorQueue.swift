/// An in-order queue that the main actor fills and one main-actor task drains.
///
/// `AsyncStream` would do, but its iterator waits in a nonisolated function: every item woke a
/// thread of Dispatch's pool before the main actor, and the first started that pool in every
/// worker. Waiting here stays on the main actor, which in a worker is the socket's thread.
@MainActor
final class MainActorQueue<Element: Sendable> {
    private var items: [Element] = []
    private var head = 0
    private var finished = false
    private var waiter: CheckedContinuation<Element?, Never>?

    /// Adds `element` after what is queued; ignored once finished.
    func yield(_ element: Element) {
        guard !finished else { return }
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: element)
        } else {
            items.append(element)
        }
    }

    /// No more elements: the reader gets what is queued, then nil.
    func finish() {
        finished = true
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: nil)
        }
    }

    /// The next element, waiting for it; nil once finished and empty.
    func next() async -> Element? {
        if head < items.count {
            let element = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
            return element
        }
        if finished { return nil }
        return await withCheckedContinuation { waiter = $0 }
    }
}
