import Foundation
import IPCWire

/// Where the broker is in its own life, and the control requests it is answering: `running`
/// admits everything; `draining` refuses what would change state (and every launch) while
/// what is in flight finishes; `stopped` once every scene is saved and stopped. Lives in the
/// broker's isolation, like a `SessionDriver`.
final class BrokerPhase {
    enum Phase: String, Sendable {
        case running, draining, stopped
    }

    private(set) var phase = Phase.running
    /// When the broker started (its uptime).
    let startedAt = Date()
    /// Control requests (from wmctl and scenes) being answered now.
    private(set) var inFlight = 0
    private var drained: [CheckedContinuation<Void, Never>] = []
    /// When the whole stop must be over (drain, saves, the end of every scene), on the
    /// broker's clock: set when the stop begins.
    private(set) var stopDeadline: ContinuousClock.Instant?
    /// During the stop: the scenes done saving and stopping, of how many.
    var stopProgress = (done: 0, of: 0)

    var isRunning: Bool { phase == .running }

    /// A request starts: one that changes state is refused unless the broker is running.
    func admit(changesState: Bool) throws(BrokerError) {
        guard phase == .running || !changesState else {
            throw BrokerError(.requestDenied, "the broker is stopping; every scene is being saved (try again when it is back)")
        }
        inFlight += 1
    }

    func finish() {
        inFlight -= 1
        if inFlight == 0 { releaseWaiters() }
    }

    /// From now on only reads are admitted. Returns once the requests in flight are answered,
    /// or after `timeout` on the broker's clock; at once when the broker was not running.
    func drain(timeout: Duration, in broker: isolated Broker) async {
        guard phase == .running else { return }
        phase = .draining
        stopDeadline = broker.configuration.clock.now + broker.configuration.stopTimeout
        broker.logger.info("draining: refusing new requests, finishing those in flight", metadata: ["inFlight": "\(inFlight)"])
        guard inFlight > 0 else { return }
        let deadline = Task {
            guard (try? await broker.configuration.clock.sleep(for: timeout)) != nil else { return }
            self.releaseWaiters()
        }
        defer { deadline.cancel() }
        await withCheckedContinuation { drained.append($0) }
    }

    /// The stop has begun (after a drain, or without one).
    func beginStopping(in broker: isolated Broker) {
        if phase == .running { phase = .draining }
        if stopDeadline == nil { stopDeadline = broker.configuration.clock.now + broker.configuration.stopTimeout }
    }

    func stopped() {
        phase = .stopped
    }

    private func releaseWaiters() {
        let waiters = drained
        drained = []
        for waiter in waiters { waiter.resume() }
    }
}
