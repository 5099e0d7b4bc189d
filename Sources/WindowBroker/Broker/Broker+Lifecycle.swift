import Foundation
import IPCWire

/// The session driver: runs the pure `SessionLifecycle` reducer for one session, performing its
/// effects against that session's worker. Callers are in the session's turn (`onSession`).
extension Broker {
    /// What the broker hands a scene when it connects.
    struct ConnectionOptions: Sendable {
        var activities: [UserActivity] = []
        /// The activity the scene is restored from, chosen once per drive: what the scene
        /// reports while it connects (a current activity before its cursor is back) must not
        /// replace it between willConnect and restoreInteractionState.
        var restoration: UserActivity?
    }

    /// Moves a session to `target`, one step at a time. Returns notes for the requester (e.g.
    /// that a stale restoration activity was kept). A scene that focus has moved away from in
    /// the meantime (sent to the background, dimmed behind a prominent scene) stops at
    /// foregroundInactive instead of becoming active.
    /// A save that could not be committed is an error of its own (`reportSaveFailure`: thrown
    /// once the drive is over, the scene where the drive left it) or, with `requireSave`, ends
    /// the drive before anything is taken away.
    @discardableResult
    func drive(
        _ id: UUID, to target: LifecycleTarget, options: ConnectionOptions = .init(), reason: DisconnectReason? = nil,
        requireSave: Bool = false, reportSaveFailure: Bool = false
    ) async throws -> [String] {
        let session = try existingSession(id)
        var options = options
        options.restoration = session.activityToRestore?.activity
        var machine = SessionLifecycle(state: session.state, hasRestoration: options.restoration != nil, requireSave: requireSave)
        var effects = machine.handle(.requested(target))
        var committed = false
        while !effects.isEmpty {
            switch effects.removeFirst() {
            case .perform(let step, let attempt):
                if step != .launch, drivers[id]?.worker == nil {
                    effects += machine.handle(.processEnded)
                    continue
                }
                if step == .didBecomeActive, !focus.stillWants(.init(id, .foregroundActive)) {
                    effects += machine.handle(.superseded(attempt: attempt))
                    continue
                }
                let event = await perform(step, attempt: attempt, on: id, options: options,
                                          reason: reason ?? .reclaimed, discarding: target == .discarded)
                if case .restorationCommitted = event { committed = true }
                if step == .restoreInteractionState {
                    if case .stepSucceeded = event { drivers[id]?.session.restorationFailures = 0 } else { drivers[id]?.session.restorationFailures += 1 }
                }
                effects += machine.handle(event)
            case .kill(let why):
                await terminate(id, reason: why)
            case .reap:
                await reap(id)
            case .emit(let step, let state):
                guard let appID = drivers[id]?.session.appID else { continue }
                setState(id, drivers[id]?.worker == nil ? .unattached : state)
                if step == .connect {
                    drivers[id]?.session.hasConnected = true
                    startLimit.recordSuccess(appID)
                }
                if step == .didBecomeActive { drivers[id]?.session.lastActiveAt = Date() }
                emit(id, app: appID, event(for: step, id: id, state: drivers[id]?.session.state ?? .unattached, committed: committed))
            case .persist:
                await persist(id)
            case .finish(let result):
                if machine.state == .unattached, drivers[id] != nil { setState(id, .unattached) }
                let notes = try result.get()
                if reportSaveFailure, let failure = machine.saveFailure {
                    let now = drivers[id]?.session.state.rawValue ?? "unattached"
                    throw BrokerError(failure.code, "the scene's state was not saved: \(failure.message) (the scene is \(now))")
                }
                return notes
            }
        }
        return machine.notes
    }

    private func event(for step: LifecycleStep, id: UUID, state: SceneState, committed: Bool) -> BrokerEvent {
        switch step {
        case .launch: .launched(pid: drivers[id]?.worker?.pid ?? 0, launch: drivers[id]?.worker?.launchKind ?? .spawned)
        case .saveRestorationActivity: .restorationSaved(committed: committed)
        default: .callback(step, state)
        }
    }

    /// Runs one step and says what happened, for the reducer to decide.
    private func perform(
        _ step: LifecycleStep, attempt: UInt64, on id: UUID, options: ConnectionOptions, reason: DisconnectReason, discarding: Bool
    ) async -> SessionLifecycle.Event {
        let timeout = step == .restoreInteractionState ? configuration.restorationTimeout
            : step == .launch ? configuration.launchTimeout : configuration.workerTimeout
        do {
            switch step {
            case .launch:
                try await launchWorker(for: id)
            case .connect:
                try await connect(id, options: options)
            case .restoreInteractionState:
                guard let restoration = options.restoration else { break }
                _ = try await request(id, .restoreInteractionState(.with { $0.activity = restoration.wire }), timeout: timeout, doing: step)
            case .willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground:
                _ = try await request(id, .transition(.with {
                    $0.transition = Self.transition(step)
                    $0.prominent = focus.prominent == id
                }), timeout: timeout, doing: step)
            case .saveRestorationActivity:
                return try await saveRestorationActivity(id, attempt: attempt)
            case .disconnect:
                await disconnect(id, reason: reason, discarded: discarding)
            }
            return .stepSucceeded(attempt: attempt)
        } catch let error as BrokerError where error.code == .timedOut {
            return .deadlineMissed(attempt: attempt, after: timeout)
        } catch let error as BrokerError {
            return .stepFailed(attempt: attempt, error)
        } catch {
            return .stepFailed(attempt: attempt, BrokerError(.internalError, "\(step.callbackName) failed: \(error)"))
        }
    }

    private static func transition(_ step: LifecycleStep) -> Windowbroker_V1_Transition {
        switch step {
        case .willEnterForeground: .willEnterForeground
        case .didBecomeActive: .didBecomeActive
        case .willResignActive: .willResignActive
        default: .didEnterBackground
        }
    }

    /// Sends a lifecycle command and waits for the answer; the reducer decides what a missed
    /// deadline or a closed connection means.
    private func request(_ id: UUID, _ command: Windowbroker_V1_WorkerCommand.OneOf_Kind, timeout: Duration, doing: String) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        guard let worker = drivers[id]?.worker else {
            throw BrokerError(.connectionClosed, "the scene has no process")
        }
        let reply = try await worker.connection.request(
            .workerCommand(.with { $0.kind = command }), timeout: timeout, what: "the scene (\(doing))")
        guard case .workerMessage(let message) = reply.body else {
            throw BrokerError(.workerFailed, "the scene answered \(doing) with an unexpected frame")
        }
        return message.kind
    }

    private func request(_ id: UUID, _ command: Windowbroker_V1_WorkerCommand.OneOf_Kind, timeout: Duration, doing step: LifecycleStep) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        try await request(id, command, timeout: timeout, doing: step.callbackName)
    }

    /// Sends a command outside a lifecycle plan (actions, continue, warnings). On a missed
    /// deadline the worker is killed; on a dead connection the exit path records why.
    func command(_ id: UUID, _ command: Windowbroker_V1_WorkerCommand.OneOf_Kind, timeout: Duration, doing: String) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        guard drivers[id]?.worker != nil else {
            throw BrokerError(.sessionNotConnected, "session \(id.uuidString.lowercased()) has no running process")
        }
        do {
            return try await request(id, command, timeout: timeout, doing: doing)
        } catch let error as BrokerError where error.code == .timedOut {
            await terminate(id, reason: .timedOut)
            throw BrokerError(.timedOut, "the scene did not finish \(doing) within \(timeout.formattedSeconds); its process was stopped and its saved state is kept")
        } catch let error as BrokerError where error.code == .connectionClosed {
            throw BrokerError(.workerFailed, "the scene's process ended during \(doing); its saved state is kept")
        }
    }

    private func launchWorker(for id: UUID) async throws {
        guard let driver = drivers[id] else { throw BrokerError(.sessionDiscarded, "session \(id.uuidString.lowercased()) went away") }
        let session = driver.session
        guard let app = apps[session.appID] else {
            throw BrokerError(.unknownApp, "app '\(session.appID)' is not installed any more (no manifest); the session is kept")
        }
        if let wait = startLimit.retryAfter(app.id) {
            let seconds = wait.seconds
            throw BrokerError(
                .crashLoop,
                "app '\(app.id)' failed to start or crashed \(startLimit.burst) times within \(startLimit.interval.formattedSeconds); new scenes are refused for another \(Int(seconds.rounded(.up))) s",
                retryAfterSeconds: seconds)
        }
        guard phase == .running else {
            throw BrokerError(.requestDenied, "the broker is stopping; no scene is started now")
        }
        guard workers.count + launchesInFlight < configuration.maxLiveWorkers else {
            throw BrokerError(.resourceExhausted, "\(workers.count) scene processes are running (limit \(configuration.maxLiveWorkers)); close or reclaim one first")
        }
        drivers[id]?.session.state = .launching
        // The slot is taken in the same step as the check: a launch that suspends (taking a
        // prewarmed worker, spawning) cannot let another one past the limit meanwhile.
        launchesInFlight += 1
        if let prewarmed = await takePrewarmed(app.id) {
            launchesInFlight -= 1
            bind(prewarmed, to: driver)
            workerOutput.bind(pid: prewarmed.pid, session: id)
            drivers[id]?.session.launchCount += 1
            return
        }
        let handle: WorkerHandle
        do {
            defer { launchesInFlight -= 1 }
            handle = try await launcher.launch(app: app, sessionID: id)
        } catch {
            setState(id, .unattached)
            startLimit.recordFailure(app.id)
            throw error
        }
        bind(handle, to: driver)
        supervise(handle)
        drivers[id]?.session.launchCount += 1
        // A new process changes what workers use: sample now rather than at the next tick.
        defer { memory.wake?() }
        do {
            try await handle.waitForHello(timeout: configuration.launchTimeout)
        } catch let error as BrokerError where error.code == .timedOut {
            startLimit.recordFailure(app.id)
            throw error
        } catch {
            startLimit.recordFailure(app.id)
            await terminate(id, reason: .timedOut)
            throw BrokerError(.workerFailed, "the scene process \(app.executable) did not start: \((error as? BrokerError)?.message ?? "\(error)")")
        }
    }

    private func connect(_ id: UUID, options: ConnectionOptions) async throws {
        guard let session = drivers[id]?.session, let app = apps[session.appID], let worker = drivers[id]?.worker else { return }
        // Claimed before anything suspends: another scene of the app connecting meanwhile
        // finds none. They go back if this connection fails.
        let discards = pendingDiscards.removeValue(forKey: session.appID) ?? []
        // The defaults snapshot and the scene's place in the app's updates, taken together.
        let (defaults, sequence) = openOutlet(id, app: app.id, connection: worker.connection)
        let storage = drivers[id]?.session.storage ?? [:]
        let command = Windowbroker_V1_WorkerCommand.OneOf_Kind.connect(.with {
            $0.session = info(session, includeRestoration: false)
            $0.newSession = session.launchCount == 1
            $0.delegateName = app.configuration(named: session.configuration)?.delegate ?? ""
            $0.discardedSessionIds = discards.map { $0.uuidString.lowercased() }
            $0.userActivities = options.activities.map(\.wire)
            if let restoration = options.restoration { $0.restorationActivity = restoration.wire }
            $0.availableConfigurations = app.configurations.map(\.name)
            $0.defaults = PlistValue.wire(dictionary: defaults)
            $0.storage = PlistValue.wire(dictionary: storage)
            $0.updateSequence = sequence
        })
        let reply: Windowbroker_V1_WorkerMessage.OneOf_Kind?
        do {
            reply = try await request(id, command, timeout: configuration.workerTimeout, doing: .connect)
        } catch {
            closeOutlet(id)
            if !discards.isEmpty { pendingDiscards[session.appID] = discards + (pendingDiscards[session.appID] ?? []) }
            throw error
        }
        outletReady(id)
        if !discards.isEmpty {
            try? await store.removePendingDiscards(discards, appID: session.appID)
            emit(id, app: session.appID, .discardsDelivered(discards))
        }
        // The configuration is chosen once, when the session is new; a reconnecting scene
        // keeps its session's configuration and role.
        if case .connected(let connected) = reply, session.launchCount == 1, !connected.configuration.isEmpty,
           connected.configuration != session.configuration {
            if let chosen = app.configuration(named: connected.configuration) {
                drivers[id]?.session.configuration = chosen.name
                drivers[id]?.session.role = chosen.role
            } else {
                logger.warning("scene chose an undeclared configuration; keeping the default",
                               metadata: ["session": "\(id)", "configuration": "\(connected.configuration)"])
            }
        }
    }

    /// Asks for a fresh restoration activity and commits it.
    private func saveRestorationActivity(_ id: UUID, attempt: UInt64) async throws -> SessionLifecycle.Event {
        let reply = try await request(id, .restorationActivityRequest(.init()), timeout: configuration.workerTimeout, doing: .saveRestorationActivity)
        guard case .restorationActivity(let answer) = reply, answer.hasActivity else {
            return .stepSucceeded(attempt: attempt)  // nothing to restore
        }
        do {
            let activity = try UserActivity(wire: answer.activity, maxBytes: configuration.maxActivityBytes)
            if let app = drivers[id].flatMap({ apps[$0.appID] }), !app.declares(activityType: activity.activityType) {
                throw BrokerError(.undeclaredActivityType, "app '\(app.id)' does not declare activity type '\(activity.activityType)'")
            }
            let now = Date()
            try await store.saveRestoration(activity, for: id, at: now)
            drivers[id]?.session.restoration = activity
            drivers[id]?.session.restorationSavedAt = now
            if !answer.snapshotPng.isEmpty { await keepSnapshot(answer.snapshotPng, for: id) }
            return .restorationCommitted(attempt: attempt)
        } catch let error as BrokerError {
            return .restorationNotSaved(attempt: attempt, BrokerError(error.code, "the scene's restoration activity was refused: \(error.message)"))
        } catch {
            return .restorationNotSaved(attempt: attempt, SessionStore.brokerError(error, doing: "commit the restoration activity", path: store.path))
        }
    }

    /// didDisconnect (and didDiscardSceneSessions when discarded), then the process exits;
    /// SIGKILL after the exit deadline.
    func disconnect(_ id: UUID, reason: DisconnectReason, discarded: Bool) async {
        guard let worker = drivers[id]?.worker else { return }
        closeOutlet(id)
        await worker.markIntendedEnd(reason)
        do {
            _ = try await request(id, .disconnect(.with {
                $0.reason = reason.description
                $0.discarded = discarded
            }), timeout: configuration.workerTimeout, doing: .disconnect)
        } catch {
            logger.warning("scene did not acknowledge didDisconnect", metadata: ["session": "\(id)", "error": "\(error)"])
        }
        if await worker.waitForExit(timeout: configuration.exitTimeout) == nil {
            logger.warning("scene did not exit after didDisconnect; killing it", metadata: ["session": "\(id)", "pid": "\(worker.pid)"])
        }
        await terminate(id, reason: reason)
    }

    /// Ends the session's worker now: SIGKILL (nothing when it already exited), wait for the
    /// exit, record it. Every path that ends a worker on purpose comes here.
    func terminate(_ id: UUID, reason: DisconnectReason) async {
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
    func reap(_ id: UUID) async {
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
            removeFromPool(worker)
            return
        }
        let id = driver.id
        unbind(driver)
        closeOutlet(id)
        leaveFocus(id)
        if reason == .memoryPressure {
            // Counted the moment the memory is given back, so `pressure` never shows the
            // smaller footprint without the reclaim that made it.
            memory.reclaimedCount += 1
            memory.reclaimedBytes += memory.pss[id] ?? 0
        }
        guard let appID = drivers[id]?.session.appID else { return }
        setState(id, .unattached)
        drivers[id]?.session.lastDisconnect = reason
        if intended && reason != .connectionLost || reason == .exited(code: 0) {
            emit(id, app: appID, .exited(reason, pid: worker.pid))
        } else {
            logger.warning("scene process ended unexpectedly", metadata: ["session": "\(id)", "pid": "\(worker.pid)", "reason": "\(reason)"])
            // A crash after it started; one before its Hello was counted as a failed launch.
            if saidHello { startLimit.recordFailure(appID) }
            emit(id, app: appID, .crashed(reason, pid: worker.pid))
        }
        await persist(id)
    }

    /// Saves the scene's state and takes its process away; the session stays. What a graceful
    /// stop and a user closing the window both do. In the session's turn.
    func saveAndDisconnect(_ id: UUID, reason: DisconnectReason, reportSaveFailure: Bool = false) async throws {
        if drivers[id]?.session.state.isForeground == true {
            try await drive(id, to: .background, reportSaveFailure: reportSaveFailure)
        }
        if drivers[id]?.session.state == .background {
            try await drive(id, to: .reclaimed, reason: reason, reportSaveFailure: reportSaveFailure)
        }
    }

    /// Keeps the picture a scene sent with its restoration activity (in the session's turn, so
    /// a discard cannot come between). A picture that is refused or cannot be written costs the
    /// switcher its picture, never the save.
    func keepSnapshot(_ png: Data, for id: UUID) async {
        do {
            var info = try SnapshotStore.validated(png)
            info.digest = SnapshotStore.digest(png)
            if drivers[id]?.snapshot?.digest == info.digest { return }
            let snapshots = self.snapshots
            try await OffLoop.run { try snapshots.save(png, for: id) }
            drivers[id]?.snapshot = info
        } catch {
            logger.warning("a scene's snapshot was not kept", metadata: [
                "SESSION_ID": "\(id.uuidString.lowercased())", "error": "\((error as? BrokerError)?.message ?? "\(error)")",
            ])
        }
    }

    /// The newest picture of a session's window.
    public func snapshot(_ id: UUID) async throws -> Windowbroker_V1_SnapshotReply {
        _ = try existingSession(id)
        guard let info = drivers[id]?.snapshot else {
            throw BrokerError(.invalidState, "session \(id.uuidString.lowercased()) has no snapshot: a scene leaves one when it goes to the background with a display")
        }
        let snapshots = self.snapshots
        let png: Data
        do {
            png = try await OffLoop.run { try snapshots.load(id) }
        } catch {
            drivers[id]?.snapshot = nil
            throw BrokerError(.invalidState, "the snapshot of session \(id.uuidString.lowercased()) cannot be read any more: \(error)")
        }
        return .with {
            $0.sessionID = id.uuidString.lowercased()
            $0.png = png
            $0.savedAt = info.savedAt.timeIntervalSince1970
            $0.width = UInt32(info.width)
            $0.height = UInt32(info.height)
        }
    }
}
