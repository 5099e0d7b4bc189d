import Foundation
import IPCWire

/// What a graceful stop could not do: each scene whose state was not saved, and why. Such a
/// scene keeps its newest committed state; the operator is told (log, STATUS=, exit status).
public struct ShutdownReport: Sendable {
    public var unsaved: [(session: SessionID, title: String, reason: String)] = []
}

/// How the broker stops: it drains (`BrokerPhase`), then saves and stops every connected
/// scene, several at once, and reports what it could not save.
extension Broker {
    /// The first step of a graceful stop: new requests and launches are refused from now on
    /// (`requestDenied`, "the broker is stopping"); the ones in flight go on. Returns once
    /// they are answered, or after `timeout`.
    public func drain(timeout: Duration) async {
        guard phase.isRunning else { return }
        pools.closed = true
        await phase.drain(timeout: timeout, in: self)
    }

    /// A control request starts: one that changes state is refused while the broker stops.
    func admitRequest(changesState: Bool) throws(BrokerError) {
        try phase.admit(changesState: changesState)
    }

    func finishRequest() {
        phase.finish()
    }

    /// Graceful stop: every connected scene saves its state (committed), is disconnected, and
    /// its process ends, several at once. Sessions come back, unattached, at the next start.
    /// Nothing new is launched meanwhile (a scene asking for a scene is refused).
    public func shutdown() async -> ShutdownReport {
        phase.beginStopping()
        pools.closed = true
        await pools.drain(reason: .brokerStopped, in: self)
        let failures = await concurrently(Array(workers.values), limit: configuration.reclaimConcurrency) { id in
            await self.stopForShutdown(id)
        }
        await launcher.shutdown()
        await store.checkpoint()
        await searchIndex?.closeCleanly()
        phase.stopped()
        events.finishAll()
        eventLog.flush()
        var report = ShutdownReport()
        for (id, failure) in failures.sorted(by: { $0.key < $1.key }) {
            guard let failure else { continue }
            report.unsaved.append((id, drivers[id]?.session.title ?? "", failure))
        }
        return report
    }

    /// Saves and stops one scene; says why its state could not be saved, if it could not.
    private func stopForShutdown(_ id: SessionID) async -> String? {
        do {
            return try await onSession(id) { () async -> String? in
                var failure: String?
                do {
                    try await saveAndDisconnect(id, reason: .brokerStopped, reportSaveFailure: true)
                } catch {
                    failure = (error as? BrokerError)?.message ?? "\(error)"
                }
                await terminate(id, reason: .brokerStopped)
                return failure
            }
        } catch {
            await terminate(id, reason: .brokerStopped)
            return "\(error)"
        }
    }
}
