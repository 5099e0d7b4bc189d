import Foundation
import IPCWire

/// Executing lifecycle plans against worker processes. Callers hold the lifecycle lock.
extension Broker {
    /// What the broker hands a scene when it connects.
    struct ConnectionOptions: Sendable {
        var activities: [UserActivity] = []
    }

    /// Moves a session to `target`, one step at a time, recording the state after each.
    /// Returns notes for the requester (e.g. that a stale restoration activity was kept).
    @discardableResult
    func drive(_ id: UUID, to target: LifecycleTarget, options: ConnectionOptions = .init(), reason: DisconnectReason? = nil) async throws -> [String] {
        let session = try existingSession(id)
        let steps = LifecyclePlan.steps(from: session.state, to: target, hasRestoration: session.restoration != nil)
        var notes: [String] = []
        do {
            try await run(steps, on: id, options: options, reason: reason, discarding: target == .discarded, notes: &notes)
        } catch {
            await persist(id)
            throw error
        }
        if !steps.isEmpty { await persist(id) }
        return notes
    }

    private func run(_ steps: [LifecycleStep], on id: UUID, options: ConnectionOptions, reason: DisconnectReason?, discarding: Bool, notes: inout [String]) async throws {
        for step in steps {
            guard let current = sessions[id] else { throw BrokerError(.sessionDiscarded, "session \(id) went away") }
            if step != .launch, workers[id] == nil {
                // Already gone (e.g. killed after missing the save deadline): disconnected is where it was going.
                if step == .disconnect { break }
                throw BrokerError(.workerFailed, "the scene's process ended before \(step.rawValue); its last saved state is kept")
            }
            if let note = try await execute(step, on: id, options: options, reason: reason ?? .reclaimed, discarding: discarding) {
                notes.append(note)
            }
            guard sessions[id] != nil else { break }
            sessions[id]?.state = workers[id] == nil ? .unattached : step.resultingState(from: current.state)
            if step == .didBecomeActive {
                sessions[id]?.lastActiveAt = Date()
            }
            emit(id, app: current.appID, Self.eventName(step), sessions[id]?.state.rawValue ?? "")
        }
    }

    static func eventName(_ step: LifecycleStep) -> String {
        switch step {
        case .launch: "launched"
        case .connect: "willConnect"
        case .saveRestorationActivity: "restorationSaved"
        case .disconnect: "didDisconnect"
        default: step.rawValue
        }
    }

    /// Runs one step. A worker that misses a deadline is killed (reason `timedOut`) and the
    /// error says so; its saved state is kept.
    private func execute(_ step: LifecycleStep, on id: UUID, options: ConnectionOptions, reason: DisconnectReason, discarding: Bool) async throws -> String? {
        switch step {
        case .launch:
            try await launchWorker(for: id)
            return nil
        case .connect:
            try await connect(id, options: options)
            return nil
        case .restoreInteractionState:
            guard let restoration = sessions[id]?.restoration else { return nil }
            _ = try await command(id, .restoreInteractionState(.with { $0.activity = restoration.wire }),
                                  timeout: configuration.restorationTimeout, doing: "restoreInteractionState")
            return nil
        case .willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground:
            _ = try await command(id, .transition(.with { $0.transition = Self.transition(step) }),
                                  timeout: configuration.workerTimeout, doing: step.rawValue)
            return nil
        case .saveRestorationActivity:
            return await saveRestorationActivity(id)
        case .disconnect:
            try await disconnect(id, reason: reason, discarded: discarding)
            return nil
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

    /// Sends a command to the session's worker and waits for its answer. On a missed
    /// deadline the worker is killed; on a dead connection the exit path records why.
    func command(_ id: UUID, _ command: Windowbroker_V1_WorkerCommand.OneOf_Kind, timeout: Duration, doing: String) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        guard let worker = workers[id] else {
            throw BrokerError(.sessionNotConnected, "session \(id.uuidString.lowercased()) has no running process")
        }
        do {
            let reply = try await worker.connection.request(
                .workerCommand(.with { $0.kind = command }), timeout: timeout, what: "the scene (\(doing))")
            guard case .workerMessage(let message) = reply.body else {
                throw BrokerError(.workerFailed, "the scene answered \(doing) with an unexpected frame")
            }
            return message.kind
        } catch let error as BrokerError where error.code == .timedOut {
            await terminate(id, reason: .timedOut)
            throw BrokerError(.timedOut, "the scene did not finish \(doing) within \(timeout.formattedSeconds); its process was stopped and its saved state is kept")
        } catch let error as BrokerError where error.code == .connectionClosed {
            throw BrokerError(.workerFailed, "the scene's process ended during \(doing); its saved state is kept")
        }
    }

    private func launchWorker(for id: UUID) async throws {
        guard let session = sessions[id] else { return }
        guard let app = apps[session.appID] else {
            throw BrokerError(.unknownApp, "app '\(session.appID)' is not installed any more (no manifest); the session is kept")
        }
        guard workers.count < configuration.maxLiveWorkers else {
            throw BrokerError(.resourceExhausted, "\(workers.count) scene processes are running (limit \(configuration.maxLiveWorkers)); close or reclaim one first")
        }
        let started = try await spawner.spawn(
            app: app, sessionID: id,
            onEnvelope: { [weak self] envelope, connection in
                await self?.workerEnvelope(envelope, from: id, connection: connection)
            })
        let worker = WorkerProcess(pid: started.pid, connection: started.connection)
        workers[id] = worker
        do {
            try ExitWatcher.watch(pid: started.pid) { [weak self] exit in
                Task { await self?.workerExited(id, worker: worker, exit: exit) }
            }
        } catch {
            worker.kill()
            workers[id] = nil
            throw error
        }
        sessions[id]?.launchCount += 1
        sessions[id]?.state = .launching
        await persist(id)
        // A new process changes what workers use: sample now rather than at the next tick.
        defer { memory.wake?() }
        do {
            try await worker.waitForHello(timeout: configuration.launchTimeout)
        } catch {
            await terminate(id, reason: .timedOut)
            throw BrokerError(.workerFailed, "the scene process \(app.executable) did not start: \((error as? BrokerError)?.message ?? "\(error)")")
        }
    }

    private func connect(_ id: UUID, options: ConnectionOptions) async throws {
        guard let session = sessions[id], let app = apps[session.appID] else { return }
        let discards = (try? await store.pendingDiscards(appID: session.appID)) ?? []
        let reply = try await command(id, .connect(.with {
            $0.session = info(session, includeRestoration: false)
            $0.discardedSessionIds = discards.map { $0.uuidString.lowercased() }
            $0.userActivities = options.activities.map(\.wire)
            if let restoration = session.restoration { $0.restorationActivity = restoration.wire }
            $0.availableConfigurations = app.configurations.map(\.name)
        }), timeout: configuration.workerTimeout, doing: "willConnect")
        if !discards.isEmpty {
            try? await store.removePendingDiscards(discards, appID: session.appID)
            emit(id, app: session.appID, "didDiscardSceneSessions", discards.map { $0.uuidString.lowercased() }.joined(separator: ","))
        }
        if case .connected(let connected) = reply, !connected.configuration.isEmpty,
           connected.configuration != session.configuration {
            if let chosen = app.configuration(named: connected.configuration) {
                sessions[id]?.configuration = chosen.name
                sessions[id]?.role = chosen.role
            } else {
                logger.warning("scene chose an undeclared configuration; keeping the default",
                               metadata: ["session": "\(id)", "configuration": "\(connected.configuration)"])
            }
        }
    }

    /// Asks for a fresh restoration activity and commits it. When the scene cannot give one,
    /// the last committed activity stays and the returned note says so.
    private func saveRestorationActivity(_ id: UUID) async -> String? {
        let kept = sessions[id]?.restoration == nil ? "there is no earlier saved state" : "the last committed restoration activity is kept"
        let reply: Windowbroker_V1_WorkerMessage.OneOf_Kind?
        do {
            reply = try await command(id, .restorationActivityRequest(.init()), timeout: configuration.workerTimeout, doing: "stateRestorationActivity")
        } catch let error as BrokerError {
            return "\(error.message); \(kept)"
        } catch {
            return "saving state failed: \(error); \(kept)"
        }
        guard case .restorationActivity(let answer) = reply, answer.hasActivity else {
            return nil
        }
        do {
            let activity = try UserActivity(wire: answer.activity, maxBytes: configuration.maxActivityBytes)
            try await store.saveRestoration(activity, for: id)
            sessions[id]?.restoration = activity
            return nil
        } catch let error as BrokerError {
            return "the scene's restoration activity was refused: \(error.message); \(kept)"
        } catch {
            return "the restoration activity could not be committed: \(error); \(kept)"
        }
    }

    /// didDisconnect (and didDiscardSceneSessions when discarded), then the process exits;
    /// SIGKILL after the exit deadline.
    func disconnect(_ id: UUID, reason: DisconnectReason, discarded: Bool) async throws {
        guard let worker = workers[id] else { return }
        await worker.markIntendedEnd(reason)
        do {
            _ = try await command(id, .disconnect(.with {
                $0.reason = reason.description
                $0.discarded = discarded
            }), timeout: configuration.workerTimeout, doing: "didDisconnect")
        } catch {
            logger.warning("scene did not acknowledge didDisconnect", metadata: ["session": "\(id)", "error": "\(error)"])
        }
        if await worker.waitForExit(timeout: configuration.exitTimeout) == nil {
            logger.warning("scene did not exit after didDisconnect; killing it", metadata: ["session": "\(id)", "pid": "\(worker.pid)"])
        }
        await terminate(id, reason: reason)
    }

    /// Ends the session's worker now: SIGKILL (a no-op if it already exited), wait for the
    /// exit, record it as intended with `reason`. Every path that ends a worker comes here.
    func terminate(_ id: UUID, reason: DisconnectReason) async {
        guard let worker = workers[id] else { return }
        await worker.markIntendedEnd(reason)
        if await worker.exit == nil {
            worker.kill()
            _ = await worker.waitForExit(timeout: configuration.exitTimeout)
        }
        workerGone(id, pid: worker.pid, reason: reason)
    }

    /// Records that a session's worker is gone. Idempotent: the exit watcher and the code
    /// that ended the worker on purpose may both call it.
    func workerGone(_ id: UUID, pid: pid_t, reason: DisconnectReason) {
        guard let worker = workers[id], worker.pid == pid else { return }
        workers[id] = nil
        guard sessions[id] != nil else { return }
        sessions[id]?.state = .unattached
        sessions[id]?.lastDisconnect = reason
    }
}
