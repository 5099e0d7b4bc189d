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
    /// The first step of a graceful stop, which starts the stop's deadline
    /// (`BrokerConfiguration.stopTimeout`): new requests and launches are refused from now on
    /// (`requestDenied`, "the broker is stopping"); the ones in flight go on. Returns once
    /// they are answered, or after 10 s (a third of the stop's time when that is shorter).
    public func drain() async {
        guard phase.isRunning else { return }
        processes.pools.closed = true
        await phase.drain(timeout: min(.seconds(10), configuration.stopTimeout / 3), in: self)
    }

    /// A control request starts: one that changes state is refused while the broker stops.
    func admitRequest(changesState: Bool) throws(BrokerError) {
        try phase.admit(changesState: changesState)
    }

    func finishRequest() {
        phase.finish()
    }

    /// Graceful stop: every connected scene is asked at once to save its state (each answer
    /// committed as it comes), is disconnected, and its process ends. Sessions come back,
    /// unattached, at the next start. Nothing new is launched meanwhile (a scene asking for a
    /// scene is refused). A scene still not done at the stop's deadline is reported and its
    /// process killed: past the deadline systemd would kill every scene left, saved or not.
    public func shutdown() async -> ShutdownReport {
        phase.beginStopping(in: self)
        let deadline = phase.stopDeadline ?? configuration.clock.now
        processes.pools.closed = true
        // The switcher and the overlay show a broker that is going away: they end first.
        await systemUI.stop()
        await processes.pools.drain(reason: .brokerStopped, in: self)
        let scenes = Array(processes.shown.values)
        phase.stopProgress = (0, scenes.count)
        var failures = await allAtOnce(scenes, within: deadline - configuration.clock.now, on: configuration.clock) { id in
            await self.stopForShutdown(id)
        } progress: { done in
            self.phase.stopProgress = (done, scenes.count)
        }
        for id in scenes where failures[id] == nil {
            failures[id] = "it was not done saving and stopping when the stop's deadline (\(configuration.stopTimeout.formattedSeconds)) passed; its process was killed"
            drivers[id]?.worker?.kill()
        }
        await launcher.shutdown()
        await store.checkpoint()
        store.stopWatchingFiles()
        await searchIndex?.closeCleanly()
        phase.stopped()
        events.finishAll()
        events.log.flush()
        var report = ShutdownReport()
        for (id, failure) in failures.sorted(by: { $0.key < $1.key }) {
            guard let failure else { continue }
            report.unsaved.append((id, drivers[id]?.session.title ?? "", failure))
        }
        return report
    }

    /// Whether requests that change state are admitted (not once a stop has begun).
    package var admitsChanges: Bool { phase.isRunning }

    /// Scenes done stopping during a graceful stop, of how many.
    package var stopProgress: (done: Int, of: Int) { phase.stopProgress }

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
