/// A count that only grows, and what waits for it to reach a value: how many frames of a
/// connection were handled, how many queued messages were written. Kept by one owner (an actor,
/// the main actor), which runs what waited in the same step as it counts, in the order it
/// was asked for.
package struct GrowingCount {
    package private(set) var value: UInt64 = 0
    private var waiting: [(target: UInt64, then: () -> Void)] = []

    package init() {}

    /// Counts one more and runs what waited for the value reached.
    package mutating func advance() {
        value += 1
        let reached = value
        release { $0 <= reached }
    }

    /// Runs `then` once the count reaches `target` (at once when it has).
    package mutating func when(reaching target: UInt64, _ then: @escaping () -> Void) {
        if target <= value { then() } else { waiting.append((target, then)) }
    }

    /// Resumes `waiter` once the count reaches `target`.
    package mutating func wait(for target: UInt64, _ waiter: CheckedContinuation<Void, Never>) {
        when(reaching: target) { waiter.resume() }
    }

    /// Runs, without their value reached, what waits for more than `reachable`: the count will
    /// not get there (the connection ended).
    package mutating func giveUp(beyond reachable: UInt64) {
        release { $0 > reachable }
    }

    private mutating func release(where matches: (UInt64) -> Bool) {
        guard !waiting.isEmpty else { return }
        var due: [() -> Void] = []
        waiting.removeAll { entry in
            guard matches(entry.target) else { return false }
            due.append(entry.then)
            return true
        }
        // Run after the list is settled: what runs may wait again.
        for then in due { then() }
    }
}
