import NIOCore

/// One scene's bounded queue of updates not yet delivered, in the app's order. A scene that
/// stops answering must cost the broker a bounded amount of memory and delay nobody else, so
/// when the queue is full the queued updates and the new one are dropped together and replaced
/// by one notice naming the range (`updatesDropped(from:to:)`): the scene resynchronises from
/// its model once, instead of replaying updates it no longer needs. Overflowing again before
/// the notice went out widens the same notice.
struct UpdateQueue<Item> {
    enum Next {
        case item(sequence: UInt64, Item)
        case dropped(ClosedRange<UInt64>)
    }

    struct Overflow {
        /// The sequences dropped by this enqueue (the queued ones and the new one).
        var sequences: [UInt64]
        /// This overflow started a notice (false: it widened one not yet delivered).
        var newNotice: Bool
        var range: ClosedRange<UInt64>
    }

    let capacity: Int
    private var items = CircularBuffer<(sequence: UInt64, item: Item)>()
    private(set) var pendingNotice: ClosedRange<UInt64>?

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var isEmpty: Bool { items.isEmpty && pendingNotice == nil }

    /// Queues an update; nil, or what an overflow dropped.
    mutating func enqueue(_ sequence: UInt64, _ item: Item) -> Overflow? {
        guard items.count >= capacity else {
            items.append((sequence, item))
            return nil
        }
        let sequences = items.map(\.sequence) + [sequence]
        items.removeAll(keepingCapacity: true)
        let newNotice = pendingNotice == nil
        let range = (pendingNotice?.lowerBound ?? sequences[0])...sequence
        pendingNotice = range
        return Overflow(sequences: sequences, newNotice: newNotice, range: range)
    }

    /// The next thing to deliver: a pending notice comes before the updates queued after it.
    mutating func next() -> Next? {
        if let notice = pendingNotice {
            pendingNotice = nil
            return .dropped(notice)
        }
        guard let first = items.popFirst() else { return nil }
        return .item(sequence: first.sequence, first.item)
    }
}
