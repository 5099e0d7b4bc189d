import NIOCore
import IPCWire

/// The sessions discarded most recently in this run, so that a late request about one is told
/// "discarded" rather than "unknown". Only the newest `capacity` are kept: a long run's closes
/// must not add up in the broker's memory, and an older one then reads as unknown, which it is.
struct RecentDiscards {
    static let capacity = 1024
    private var members: Set<SessionID> = []
    /// Oldest first: the one to forget when a new one comes at capacity.
    private var order = CircularBuffer<SessionID>()

    mutating func insert(_ id: SessionID) {
        guard members.insert(id).inserted else { return }
        order.append(id)
        if order.count > Self.capacity { members.remove(order.removeFirst()) }
    }

    func contains(_ id: SessionID) -> Bool { members.contains(id) }

    var count: Int { order.count }

    /// The one whose id starts with `prefix`, if any (`wmctl` takes unique prefixes).
    func first(withPrefix prefix: String) -> SessionID? {
        members.first { $0.description.hasPrefix(prefix) }
    }
}
