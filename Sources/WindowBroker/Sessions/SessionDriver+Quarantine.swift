import Foundation
import IPCWire

/// A restoration activity that keeps failing is set aside instead of failing every launch, and
/// offered again on request. In the session's turn, like every change to its lifecycle.
extension SessionDriver {
    /// A restoration activity that failed twice in a row is set aside before the next launch:
    /// the scene starts without it instead of failing for good. Kept, shown by `show`, and put
    /// back by `activate --retry-restore`.
    func quarantineIfPoisoned(in host: isolated some SessionHost) async throws -> String? {
        guard session.restorationFailures >= 2,
              let (poisoned, source) = try await savedActivities(in: host).activityToRestore else { return nil }
        let now = Date()
        try await host.store.quarantine(id, from: source, at: now)
        session.saved?.quarantined = poisoned
        session.saved?.quarantinedAt = now
        session.saved?.restoration = nil
        session.saved?.currentActivity = nil
        session.restorationFailures = 0
        host.logger.warning("restoration activity quarantined", metadata: ["session": "\(id)"])
        return "its restoration activity failed twice in a row; it is set aside (see `wmctl show`) and the scene starts without it; `wmctl activate \(id) --retry-restore` tries it again"
    }

    /// `activate --retry-restore`: the quarantined activity is offered, not forced. When the
    /// scene committed something after the quarantine (it ran on without it), that is newer and
    /// wins; the quarantined one stays listed. Otherwise it becomes the restoration activity again.
    func retryQuarantined(in host: isolated some SessionHost) async throws -> String? {
        let saved = try await savedActivities(in: host)
        guard let quarantined = saved.quarantined else { return nil }
        let short = id.description
        if let newest = saved.newestSaveAt, newest > saved.quarantinedAt ?? .distantPast {
            return "not retried: session \(short) saved newer state after its restoration activity was set aside, and the newest state wins; the set-aside activity stays listed in `wmctl show \(short)`"
        }
        if session.state.isConnected {
            return "not retried: session \(short) is running; background or reclaim it first, then activate it with --retry-restore"
        }
        let now = Date()
        try await host.store.restoreQuarantined(id, at: now)
        session.saved?.restoration = quarantined
        session.saved?.restorationSavedAt = now
        session.saved?.quarantined = nil
        session.saved?.quarantinedAt = nil
        session.restorationFailures = 0
        return nil
    }
}
