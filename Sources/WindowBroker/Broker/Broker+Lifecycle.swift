import Foundation
import IPCWire

/// The broker's side of a scene's life: it hands a session's lifecycle to its driver
/// (`Sessions/SessionDriver+Lifecycle`), and records the end of the session's process, however
/// it came. Callers are in the session's turn (`onSession`).
extension Broker {
    /// Moves the session to `target` through its driver (`SessionDriver.drive`).
    @discardableResult
    func drive(
        _ id: SessionID, to target: LifecycleTarget, options: SessionDriver.ConnectionOptions = .init(), reason: DisconnectReason? = nil,
        requireSave: Bool = false, reportSaveFailure: Bool = false
    ) async throws -> [String] {
        try await driver(id).drive(
            to: target, options: options, reason: reason, requireSave: requireSave, reportSaveFailure: reportSaveFailure, in: self)
    }

    /// Saves the scene's state and takes its process away; the session stays.
    func saveAndDisconnect(_ id: SessionID, reason: DisconnectReason, reportSaveFailure: Bool = false) async throws {
        try await driver(id).saveAndDisconnect(reason: reason, reportSaveFailure: reportSaveFailure, in: self)
    }

    /// Sends a command outside a lifecycle plan (actions, continue, warnings). On a missed
    /// deadline the worker is killed; on a dead connection the exit path records why.
    func command(_ id: SessionID, _ command: Windowbroker_V1_WorkerCommand.OneOf_Kind, timeout: Duration, doing: String) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        guard let worker = drivers[id]?.worker else {
            throw BrokerError(.sessionNotConnected, "session \(id) has no running process")
        }
        do {
            return try await worker.command(command, timeout: timeout, doing: doing)
        } catch let error as BrokerError where error.code == .timedOut {
            await terminate(id, reason: .timedOut)
            throw BrokerError(.timedOut, "the scene did not finish \(doing) within \(timeout.formattedSeconds); its process was stopped and its saved state is kept")
        } catch let error as BrokerError where error.code == .connectionClosed {
            throw BrokerError(.workerFailed, "the scene's process ended during \(doing); its saved state is kept")
        }
    }

    /// Ends the session's worker now: SIGKILL (nothing when it already exited), wait for the
    /// exit, record it. Every path that ends a worker on purpose comes here.
    func terminate(_ id: SessionID, reason: DisconnectReason) async {
        guard let worker = drivers[id]?.worker else { return }
        if await worker.exit == nil {
            await worker.markIntendedEnd(reason)
            worker.kill()
            _ = await worker.waitForExit(timeout: configuration.exitTimeout)
        }
        await workerEnded(worker, reason: await self.reason(for: worker, fallback: reason))
    }

    /// The worker's connection is gone: a process that exits by itself gets its own reason
    /// (a crash is a crash); one that runs on without its connection is stopped.
    func reap(_ id: SessionID) async {
        guard let worker = drivers[id]?.worker else { return }
        if await worker.waitForExit(timeout: .milliseconds(500)) == nil {
            logger.warning("scene closed its connection but kept running; stopping it", metadata: ["session": "\(id)", "pid": "\(worker.pid)"])
        }
        await terminate(id, reason: .connectionLost)
    }

    /// Why the worker ended: what the broker intended, else what the kernel reported.
    func reason(for worker: WorkerHandle, fallback: DisconnectReason) async -> DisconnectReason {
        if let intended = await worker.intendedEnd { return intended }
        switch await worker.exit {
        case .exited(let code)?: return .exited(code: code)
        case .signaled(let signal)?: return .crashed(signal: signal)
        case nil: return fallback
        }
    }

    /// Records that a worker is gone, once: the exit watch, a reap and a terminate may all
    /// report the same end. The session stays, unattached, with its last committed activity.
    func workerEnded(_ worker: WorkerHandle, reason: DisconnectReason) async {
        // Asked before anything changes: from the lookup to the event nothing suspends, so a
        // second path ending the same worker (its connection closing while a disconnect
        // waits) finds it gone, and `exited` always comes before the step that follows it.
        let intended = await worker.intendedEnd != nil
        let saidHello = await worker.saidHello
        guard let driver = sessionShown(by: worker) else {
            processes.pools.remove(worker)
            return
        }
        let id = driver.id
        unbind(driver)
        sync.closeOutlet(id)
        compositor.windowGone(id)
        leaveFocus(id)
        if reason == .memoryPressure { memory.recordReclaimed(id) }
        guard let appID = drivers[id]?.session.appID else { return }
        setState(id, .unattached)
        drivers[id]?.session.lastDisconnect = reason
        if intended && reason != .connectionLost || reason == .exited(code: 0) {
            emit(id, app: appID, .exited(reason, pid: worker.pid))
        } else {
            logger.warning("scene process ended unexpectedly", metadata: ["session": "\(id)", "pid": "\(worker.pid)", "reason": "\(reason)"])
            // A crash after it started; one before its Hello was counted as a failed launch.
            if saidHello { processes.admission.recordFailure(appID, now: configuration.clock.now) }
            emit(id, app: appID, .crashed(reason, pid: worker.pid))
        }
        await persist(id)
        releaseSavedActivitiesLater(id)
        memory.heap.soon()
    }

    /// The newest picture of a session's window; with `thumbnail`, the thumbnail kept with it
    /// (the whole picture when there is none).
    public func snapshot(_ id: SessionID, thumbnail: Bool = false) async throws -> Snapshot {
        _ = try existingSession(id)
        guard let info = drivers[id]?.snapshot else {
            throw BrokerError(.invalidState, "session \(id) has no snapshot: a scene leaves one when it goes to the background with a display")
        }
        let snapshots = self.snapshots
        if thumbnail, let small = info.thumbnail {
            if let png = try? await OffLoop.run({ try snapshots.load(id, thumbnail: true) }) {
                return Snapshot(session: id, png: png, savedAt: info.savedAt, width: small.width, height: small.height, isThumbnail: true)
            }
            // Lost: the whole picture still answers.
            drivers[id]?.snapshot?.thumbnail = nil
        }
        let png: Data
        do {
            png = try await OffLoop.run { try snapshots.load(id) }
        } catch {
            drivers[id]?.snapshot = nil
            throw BrokerError(.invalidState, "the snapshot of session \(id) cannot be read any more: \(error)")
        }
        return Snapshot(session: id, png: png, savedAt: info.savedAt, width: info.width, height: info.height)
    }
}
