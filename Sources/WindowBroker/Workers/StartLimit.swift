import Foundation
import IPCWire

/// Systemd's `StartLimitBurst`/`StartLimitIntervalSec` for scene launches, per app: `burst`
/// failed launches or crashes within `interval` put the app in a crash loop, during which new
/// launches are refused (`crashLoop`, with when to retry). Each loop in a row doubles the wait
/// (capped at `maxBackoff`); a scene that connects again ends the streak. Pure logic.
public struct StartLimit: Sendable, Equatable {
    public var burst: Int
    public var interval: Duration
    public var maxBackoff: Duration = .seconds(300)
    private var failures: [AppID: [ContinuousClock.Instant]] = [:]
    private var loopUntil: [AppID: ContinuousClock.Instant] = [:]
    private var streak: [AppID: Int] = [:]

    public init(burst: Int, interval: Duration) {
        self.burst = max(1, burst)
        self.interval = interval
    }

    /// How long until `app` may launch again; nil when it may now.
    public func retryAfter(_ app: AppID, now: ContinuousClock.Instant) -> Duration? {
        guard let until = loopUntil[app], until > now else { return nil }
        return until - now
    }

    /// A launch of `app` failed or one of its scenes crashed.
    public mutating func recordFailure(_ app: AppID, now: ContinuousClock.Instant) {
        var recent = (failures[app] ?? []).filter { now - $0 < interval }
        recent.append(now)
        guard recent.count >= burst else {
            failures[app] = recent
            return
        }
        failures[app] = []
        let trips = streak[app, default: 0]
        streak[app] = trips + 1
        let wait = min(interval * (1 << min(trips, 16)), maxBackoff)
        loopUntil[app] = now + wait
    }

    /// A scene of `app` connected: the streak is over.
    public mutating func recordSuccess(_ app: AppID) {
        streak[app] = nil
        failures[app] = nil
    }
}
