import IPCWire

/// The time the broker decides by: crash-loop waits, the pressure level's hysteresis and the
/// interval between reclaims, the drain deadline, a post's wait for acknowledgements, a
/// prewarm pool's retry. Injected (`BrokerConfiguration.clock`) so that a test moves time on
/// instead of sleeping through it (`WindowBrokerTesting.ManualClock`). What the broker only
/// measures (how long a reclaim took) and the deadlines of a single request on the wire stay
/// on the real clock.
public protocol BrokerClock: Sendable {
    var now: ContinuousClock.Instant { get }
    func sleep(for duration: Duration) async throws
}

/// Real time: `ContinuousClock`, slept on an event loop's timer (`WireRuntime.sleep`).
public struct SystemClock: BrokerClock {
    public init() {}
    public var now: ContinuousClock.Instant { .now }
    public func sleep(for duration: Duration) async throws {
        try await WireRuntime.sleep(for: duration)
    }
}
