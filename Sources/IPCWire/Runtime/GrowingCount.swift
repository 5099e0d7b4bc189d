/// A count that only grows, and the tasks waiting for it to reach a value: how many frames of a
/// connection were handled, how many queued messages were written. Kept by one owner (an actor,
/// the main actor), which resumes its waiters in the same step as it counts.
package struct GrowingCount {
    package private(set) var value: UInt64 = 0
    private var waiters: [(target: UInt64, waiter: CheckedContinuation<Void, Never>)] = []

    package init() {}

    /// Counts one more and resumes whoever waited for the value reached.
    package mutating func advance() {
        value += 1
        let reached = value
        release { $0 <= reached }
    }

    /// Resumes `waiter` once the count reaches `target` (at once when it has).
    package mutating func wait(for target: UInt64, _ waiter: CheckedContinuation<Void, Never>) {
        if target <= value { waiter.resume() } else { waiters.append((target, waiter)) }
    }

    /// Resumes, without their value reached, those waiting for more than `reachable`: the
    /// count will not get there (the connection ended).
    package mutating func giveUp(beyond reachable: UInt64) {
        release { $0 > reachable }
    }

    private mutating func release(where matches: (UInt64) -> Bool) {
        guard !waiters.isEmpty else { return }
        waiters.removeAll { entry in
            guard matches(entry.target) else { return false }
            entry.waiter.resume()
            return true
        }
    }
}
