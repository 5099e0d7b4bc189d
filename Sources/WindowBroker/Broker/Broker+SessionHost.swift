import Foundation
import IPCWire

/// The broker as its sessions' host (`Sessions/SessionHost`): the verbs a driver may use,
/// each done by the owner of the state it changes.
extension Broker: SessionHost {
    func manifest(_ app: AppID) -> AppManifest? { apps.manifests[app] }

    func claimPendingDiscards(of app: AppID) -> [SessionID] { apps.claimPendingDiscards(of: app) }

    func returnPendingDiscards(_ sessions: [SessionID], of app: AppID) { apps.returnPendingDiscards(sessions, of: app) }

    func windowHandle(of id: SessionID) -> String? { drivers[id]?.windowHandle }

    var isRunning: Bool { phase.isRunning }

    func admitLaunch(_ app: AppID) throws(BrokerError) {
        try processes.admit(app, stopping: !phase.isRunning, now: configuration.clock.now)
    }

    func launchSettled() { processes.admission.finished() }

    func launchSucceeded(_ app: AppID) { processes.admission.recordSuccess(app) }

    func launchFailed(_ app: AppID) { processes.admission.recordFailure(app, now: configuration.clock.now) }

    func takePrewarmed(_ app: AppID) -> WorkerHandle? { processes.pools.take(app, in: self) }

    func bind(_ worker: WorkerHandle, to driver: SessionDriver, prewarmed: Bool) {
        driver.worker = worker
        processes.shown[ObjectIdentifier(worker)] = driver.id
        if prewarmed {
            workerOutput.bind(pid: worker.pid, session: driver.id)
        } else {
            supervise(worker)
        }
    }

    func workerLaunched() { memory.launched(in: self) }

    func failedToStart(_ pid: Int32, session: SessionID) async -> [String] {
        // What a process printed before it ended may still be in its pipes for a moment.
        var waited = 0
        while workerOutput.isFollowing(pid: pid), waited < 20 {
            try? await WireRuntime.sleep(for: .milliseconds(10))
            waited += 1
        }
        if let app = drivers[session]?.appID { workerOutput.keepFailedLaunch(pid: pid, session: session, app: app) }
        return workerOutput.lines(of: session, last: 20).filter { $0.pid == pid }.suffix(3).map(\.text)
    }

    func openOutlet(_ id: SessionID, app: AppID, connection: WireConnection) -> (defaults: [String: PlistValue], sequence: UInt64) {
        sync.openOutlet(id, app: app, connection: connection, in: self)
    }

    func outletReady(_ id: SessionID) { sync.outletReady(id, in: self) }

    func closeOutlet(_ id: SessionID) { sync.closeOutlet(id) }

    func answer(_ request: Windowbroker_V1_ControlRequest, from id: SessionID) async -> Envelope.OneOf_Body {
        await ControlRequestHandler(broker: self, logger: logger).answer(request, from: id)
    }
}
