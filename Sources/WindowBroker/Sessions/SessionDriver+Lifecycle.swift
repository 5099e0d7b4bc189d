import Foundation
import IPCWire

/// How a driver moves its session: the pure `SessionLifecycle` reducer decides each step, and
/// the driver performs it against its own scene process. Every method runs in the session's
/// turn (`Broker.onSession`), isolated to its host (`SessionHost`): what the host offers
/// (store, focus, events, apps, launch slots) is used, never another session's state.
extension SessionDriver {
    /// What the broker hands a scene when it connects.
    struct ConnectionOptions: Sendable {
        var activities: [UserActivity] = []
        /// The activity the scene is restored from, chosen once per drive: what the scene
        /// reports while it connects (a current activity before its cursor is back) must not
        /// replace it between willConnect and restoreInteractionState.
        var restoration: UserActivity?
        /// The scene is restored on its way to the front: its picture goes with willConnect.
        var toTheFront = false
    }

    /// Moves the session to `target`, one step at a time. Returns notes for the requester (e.g.
    /// that a stale restoration activity was kept). A scene that focus has moved away from in
    /// the meantime (sent to the background, dimmed behind a prominent scene) stops at
    /// foregroundInactive instead of becoming active.
    /// A save that could not be committed is an error of its own (`reportSaveFailure`: thrown
    /// once the drive is over, the scene where the drive left it) or, with `requireSave`, ends
    /// the drive before anything is taken away.
    /// `succeeded` runs once when the drive's steps succeeded: before it writes the session's
    /// record when it writes one (that write waits behind the commit of what the scene
    /// reported), else as it returns.
    @discardableResult
    func drive(
        to target: LifecycleTarget, options: ConnectionOptions = .init(), reason: DisconnectReason? = nil,
        requireSave: Bool = false, reportSaveFailure: Bool = false, succeeded: () async -> Void = {}, in host: isolated some SessionHost
    ) async throws -> [String] {
        var options = options
        // A session without a process reads its activities back while its process starts: the
        // steps are planned from what it knew when it let go of them (`restores`), and the
        // first step after the launch waits for the read. Ending such a session needs none.
        var readingAhead = false
        if session.saved != nil || worker != nil {
            options.restoration = try await savedActivities(in: host).activityToRestore?.activity
        } else if target != .reclaimed, target != .discarded {
            readSavedActivitiesAhead(in: host)
            readingAhead = true
        }
        var machine = SessionLifecycle(state: session.state, hasRestoration: session.restores, requireSave: requireSave)
        var effects = machine.handle(.requested(target))
        var committed = false
        var toldSucceeded = false
        while !effects.isEmpty {
            switch effects.removeFirst() {
            case .perform(let step, let attempt):
                if step != .launch, worker == nil {
                    effects += machine.handle(.processEnded)
                    continue
                }
                if step != .launch, readingAhead {
                    readingAhead = false
                    do {
                        options.restoration = try await savedActivities(in: host).activityToRestore?.activity
                    } catch {
                        effects += machine.handle(.stepFailed(attempt: attempt, error as? BrokerError
                            ?? SessionStore.brokerError(error, doing: "read the session's saved activities", path: host.store.path)))
                        continue
                    }
                }
                if step == .didBecomeActive, !host.focus.stillWants(.init(id, .foregroundActive)) {
                    effects += machine.handle(.superseded(attempt: attempt))
                    continue
                }
                machine.carry(stepsToCarry(after: step, remaining: machine.remaining, in: host))
                options.toTheFront = machine.remaining.contains(.willEnterForeground)
                let carried = machine.inFlight?.carried ?? []
                let event = await perform(step, attempt: attempt, carrying: carried, options: options, reason: reason ?? .reclaimed,
                                          discarding: target == .discarded, in: host)
                if case .restorationCommitted = event { committed = true }
                if step == .restoreInteractionState {
                    if case .stepSucceeded = event { session.restorationFailures = 0 } else { session.restorationFailures += 1 }
                }
                effects += machine.handle(event)
            case .kill(let why):
                await host.terminate(id, reason: why)
            case .reap:
                await host.reap(id)
            case .emit(let step, let state):
                session.state = worker == nil ? .unattached : state
                if step == .connect {
                    session.hasConnected = true
                    host.launchSucceeded(appID)
                }
                if step == .didBecomeActive { session.lastActiveAt = Date() }
                host.emit(id, app: appID, event(for: step, committed: committed))
            case .persist:
                if !toldSucceeded, case .finish(.success) = effects.first {
                    toldSucceeded = true
                    await succeeded()
                }
                await host.persist(id)
            case .finish(let result):
                if machine.state == .unattached { session.state = .unattached }
                let notes = try result.get()
                if reportSaveFailure, let failure = machine.saveFailure {
                    throw BrokerError(failure.code, "the scene's state was not saved: \(failure.message) (the scene is \(session.state.rawValue))")
                }
                if !toldSucceeded { await succeeded() }
                return notes
            }
        }
        if !toldSucceeded { await succeeded() }
        return machine.notes
    }

    private func event(for step: LifecycleStep, committed: Bool) -> BrokerEvent {
        switch step {
        case .launch: .launched(pid: worker?.pid ?? 0, launch: worker?.launchKind ?? .spawned)
        case .saveRestorationActivity: .restorationSaved(committed: committed)
        default: .callback(step, session.state)
        }
    }

    /// The transitions that go to the scene with `step` (`SessionLifecycle.carry`): those that
    /// come right after willConnect or after another transition, which the scene runs in one
    /// turn. didBecomeActive goes along only while focus still wants the scene active; otherwise
    /// it is left to its own turn, where `superseded` can still stop it.
    private func stepsToCarry(after step: LifecycleStep, remaining: [LifecycleStep], in host: isolated some SessionHost) -> [LifecycleStep] {
        guard step == .connect || Self.isTransition(step) else { return [] }
        var carried: [LifecycleStep] = []
        for next in remaining {
            guard Self.isTransition(next) else { break }
            if next == .didBecomeActive, !host.focus.stillWants(.init(id, .foregroundActive)) { break }
            carried.append(next)
        }
        return carried
    }

    /// The window a prominent scene is presented over: its requester's while that is on
    /// screen, else the key scene's before it came up.
    private func parentWindowHandle(in host: isolated some SessionHost) -> String? {
        let visible = host.focus.visible
        let over = session.requestedBy.flatMap { visible.contains($0) ? $0 : nil } ?? host.focus.returnTo
        return over.flatMap { host.windowHandle(of: $0) }
    }

    private static func isTransition(_ step: LifecycleStep) -> Bool {
        switch step {
        case .willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground: true
        default: false
        }
    }

    /// Runs one step (with the steps carried along) and says what happened, for the reducer to
    /// decide. Carried steps add their own deadline to the command's.
    private func perform(
        _ step: LifecycleStep, attempt: UInt64, carrying carried: [LifecycleStep], options: ConnectionOptions,
        reason: DisconnectReason, discarding: Bool, in host: isolated some SessionHost
    ) async -> SessionLifecycle.Event {
        let configuration = host.configuration
        let timeout = (step == .restoreInteractionState ? configuration.restorationTimeout
            : step == .launch ? configuration.launchTimeout : configuration.workerTimeout) + configuration.workerTimeout * carried.count
        let doing = ([step] + carried).map(\.callbackName).joined(separator: ", ")
        let prominent = host.focus.prominent == id
        let parent = prominent ? parentWindowHandle(in: host) : nil
        let followers = carried.map { next in
            SceneCommand.Transition(step: next, prominent: prominent, parentWindowHandle: next == .willEnterForeground ? parent : nil)
        }
        do {
            switch step {
            case .launch:
                try await launch(in: host)
            case .connect:
                try await connect(options: options, then: followers, timeout: timeout, doing: doing, in: host)
            case .restoreInteractionState:
                guard let restoration = options.restoration else { break }
                _ = try await request(.restoreInteractionState(restoration), timeout: timeout, doing: doing, in: host)
            case .willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground:
                _ = try await request(.transition(.init(
                    step: step, prominent: prominent, parentWindowHandle: step == .willEnterForeground ? parent : nil, then: followers
                )), timeout: timeout, doing: doing, in: host)
            case .saveRestorationActivity:
                return try await saveRestorationActivity(attempt: attempt, in: host)
            case .disconnect:
                await disconnect(reason: reason, discarded: discarding, in: host)
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

    /// Sends a lifecycle command to the scene and waits for its answer; what a missed deadline
    /// or a closed connection means is the caller's to decide (the reducer).
    func request(
        _ command: SceneCommand, timeout: Duration, doing: String, in host: isolated some SessionHost
    ) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        guard let worker else {
            throw BrokerError(.connectionClosed, "the scene has no process")
        }
        return try await worker.command(command.wire, timeout: timeout, doing: doing)
    }

    /// A process for the session: the one started while its record was committed
    /// (`startEarly`), else a prewarmed one of its app when there is one, else a new one, which
    /// must say Hello before the launch deadline.
    private func launch(in host: isolated some SessionHost) async throws {
        guard let app = host.manifest(appID) else {
            await abandonEarlyStart(in: host)
            throw BrokerError(.unknownApp, "app '\(appID)' is not installed any more (no manifest); the session is kept")
        }
        let configuration = host.configuration
        // A process started early passed the other checks when it started, and holds its slot.
        if earlyStart != nil, let refusal = Self.refusalWhileStopping(in: host) {
            await abandonEarlyStart(in: host)
            throw refusal
        }
        let early = earlyStart
        earlyStart = nil
        if early == nil { try admitLaunch(app, in: host) }
        session.state = .launching
        if early == nil, let prewarmed = host.takePrewarmed(app.id) {
            host.launchSettled()
            host.bind(prewarmed, to: self, prewarmed: true)
            session.launchCount += 1
            return
        }
        let handle: WorkerHandle
        do {
            defer { host.launchSettled() }
            if let early {
                handle = try await early.value
            } else {
                handle = try await host.launcher.launch(app: app, sessionID: id)
            }
        } catch {
            session.state = .unattached
            host.launchFailed(app.id)
            throw error
        }
        host.bind(handle, to: self, prewarmed: false)
        session.launchCount += 1
        // A new process changes what workers use: read soon rather than at the next tick.
        defer { host.workerLaunched() }
        do {
            try await handle.waitForHello(timeout: configuration.launchTimeout)
        } catch let error as BrokerError where error.code == .timedOut {
            host.launchFailed(app.id)
            throw error
        } catch {
            host.launchFailed(app.id)
            // A process that ended before its Hello says how: its exit, and what it printed last.
            let exit = await handle.waitForExit(timeout: .milliseconds(500))
            let printed = await host.failedToStart(handle.pid, session: id)
            await host.terminate(id, reason: .timedOut)
            var why = exit.map(\.description) ?? (error as? BrokerError)?.message ?? "\(error)"
            if !printed.isEmpty { why += "; it printed: " + printed.map { "\"\($0)\"" }.joined(separator: ", ") }
            // A session that ran before is kept, and its log with it; a new one is not kept.
            if session.hasConnected { why += " (`wmctl logs \(id)` shows all it printed)" }
            throw BrokerError(.workerFailed, "the scene process \(app.executable) did not start: \(why)")
        }
    }

    /// Takes a launch slot for the session's process, or says why none may start now (the
    /// app's crash loop, the broker stopping, the limit on live processes).
    private func admitLaunch(_ app: AppManifest, in host: isolated some SessionHost) throws(BrokerError) {
        try host.admitLaunch(app.id)
    }

    /// Why no process is started while the broker stops; nil while it runs.
    private static func refusalWhileStopping(in host: isolated some SessionHost) -> BrokerError? {
        host.isRunning ? nil : LaunchAdmission.stopping
    }

    /// Starts the new session's process while its record is being committed, so that a cold
    /// open's slowest part (a fork or spawn, then the process's start until its Hello) no
    /// longer waits for the insert: the launch step takes the process when the session's turn
    /// comes; the open answers once the record is committed and on disk. Not for an
    /// app with a prewarmed process ready (binding one is the launch) or one that may not
    /// launch now (the launch step says why, in its turn).
    func startEarly(in host: isolated some SessionHost) {
        guard earlyStart == nil, worker == nil, let app = host.manifest(appID),
              host.prewarmedCount(appID) == 0,
              (try? admitLaunch(app, in: host)) != nil else { return }
        let (launcher, id) = (host.launcher, id)
        earlyStart = Task { try await launcher.launch(app: app, sessionID: id) }
    }

    /// A process started early that no launch step took (the insert failed, the open ended
    /// before its launch): stopped, and its slot given back. Nothing supervises it, so there is
    /// no end to report; its launcher reaps it.
    func abandonEarlyStart(in host: isolated some SessionHost) async {
        guard let early = earlyStart else { return }
        earlyStart = nil
        defer { host.launchSettled() }
        try? await early.value.kill()
    }

    /// willConnect: everything the scene needs to start, in one command, with the transitions
    /// that follow it (`then`).
    private func connect(
        options: ConnectionOptions, then followers: [SceneCommand.Transition], timeout: Duration, doing: String,
        in host: isolated some SessionHost
    ) async throws {
        // The picture a restored scene shows until it is restored, read off the broker's
        // executor, before anything is claimed; one the store cannot read leaves the window blank.
        var placeholder: Data?
        if options.restoration != nil, options.toTheFront, snapshot != nil {
            let (snapshots, id) = (host.snapshots, id)
            placeholder = try? await OffLoop.run { try snapshots.load(id) }
        }
        guard let app = host.manifest(appID), let worker else { return }
        // Claimed before anything suspends: another scene of the app connecting meanwhile
        // finds none. They go back if this connection fails.
        let discards = host.claimPendingDiscards(of: appID)
        // The defaults snapshot and the scene's place in the app's updates, taken together.
        let (defaults, sequence) = host.openOutlet(id, app: app.id, connection: worker.connection)
        let session = self.session
        let command = SceneCommand.connect(.init(
            session: host.status(session), isNew: session.launchCount == 1,
            delegateName: app.configuration(named: session.configuration)?.delegate ?? "", discardedSessions: discards,
            activities: options.activities, restoration: options.restoration, availableConfigurations: app.configurations.map(\.name),
            defaults: defaults, storage: session.storage, updateSequence: sequence, then: followers, placeholderPNG: placeholder))
        let reply: Windowbroker_V1_WorkerMessage.OneOf_Kind?
        do {
            reply = try await request(command, timeout: timeout, doing: doing, in: host)
        } catch {
            host.closeOutlet(id)
            host.returnPendingDiscards(discards, of: appID)
            throw error
        }
        host.outletReady(id)
        if !discards.isEmpty {
            try? await host.store.removePendingDiscards(discards, appID: appID)
            host.emit(id, app: appID, .discardsDelivered(discards))
        }
        // The configuration is chosen once, when the session is new; a reconnecting scene
        // keeps its session's configuration and role.
        if case .connected(let connected) = reply, session.launchCount == 1, !connected.configuration.isEmpty,
           connected.configuration != session.configuration {
            if let chosen = app.configuration(named: connected.configuration) {
                self.session.configuration = chosen.name
                self.session.role = chosen.role
            } else {
                host.logger.warning("scene chose an undeclared configuration; keeping the default",
                                      metadata: ["session": "\(id)", "configuration": "\(connected.configuration)"])
            }
        }
    }

    /// Asks for a fresh restoration activity and commits it.
    private func saveRestorationActivity(attempt: UInt64, in host: isolated some SessionHost) async throws -> SessionLifecycle.Event {
        let reply = try await request(.restorationActivity, timeout: host.configuration.workerTimeout,
                                      doing: LifecycleStep.saveRestorationActivity.callbackName, in: host)
        guard case .restorationActivity(let answer) = reply, answer.hasActivity else {
            return .stepSucceeded(attempt: attempt)  // nothing to restore
        }
        do {
            let activity = try UserActivity(wire: answer.activity, maxBytes: host.configuration.maxActivityBytes)
            if let app = host.manifest(appID), !app.declares(activityType: activity.activityType) {
                throw BrokerError(.undeclaredActivityType, "app '\(app.id)' does not declare activity type '\(activity.activityType)'")
            }
            let now = Date()
            try await host.store.saveRestoration(activity, for: id, at: now)
            session.saved?.restoration = activity
            session.saved?.restorationSavedAt = now
            if !answer.snapshotPng.isEmpty { await keepSnapshot(answer.snapshotPng, thumbnail: answer.thumbnailPng, in: host) }
            return .restorationCommitted(attempt: attempt)
        } catch let error as BrokerError {
            return .restorationNotSaved(attempt: attempt, BrokerError(error.code, "the scene's restoration activity was refused: \(error.message)"))
        } catch {
            return .restorationNotSaved(attempt: attempt, SessionStore.brokerError(error, doing: "commit the restoration activity", path: host.store.path))
        }
    }

    /// didDisconnect (and didDiscardSceneSessions when discarded), then the process exits;
    /// SIGKILL after the exit deadline.
    func disconnect(reason: DisconnectReason, discarded: Bool, in host: isolated some SessionHost) async {
        guard let worker else { return }
        host.closeOutlet(id)
        await worker.markIntendedEnd(reason)
        do {
            _ = try await request(.disconnect(reason: reason, discarded: discarded), timeout: host.configuration.workerTimeout, doing: LifecycleStep.disconnect.callbackName, in: host)
        } catch {
            host.logger.warning("scene did not acknowledge didDisconnect", metadata: ["session": "\(id)", "error": "\(error)"])
        }
        if await worker.waitForExit(timeout: host.configuration.exitTimeout) == nil {
            host.logger.warning("scene did not exit after didDisconnect; killing it", metadata: ["session": "\(id)", "pid": "\(worker.pid)"])
        }
        await host.terminate(id, reason: reason)
    }

    /// Saves the scene's state and takes its process away; the session stays. What a graceful
    /// stop and a user closing the window both do.
    func saveAndDisconnect(reason: DisconnectReason, reportSaveFailure: Bool = false, in host: isolated some SessionHost) async throws {
        if session.state.isForeground {
            try await drive(to: .background, reportSaveFailure: reportSaveFailure, in: host)
        }
        if session.state == .background {
            try await drive(to: .reclaimed, reason: reason, reportSaveFailure: reportSaveFailure, in: host)
        }
    }

    /// Asks a connected scene for a picture of its window as it is now (the switcher shows the
    /// scenes on screen as they look, not as they last went to the background). Its
    /// restoration activity comes along and is not stored here: saving is the lifecycle's.
    func refreshSnapshot(in host: isolated some SessionHost) async {
        guard worker != nil, session.state.isConnected else { return }
        guard case .restorationActivity(let answer)? = try? await request(
            .restorationActivity, timeout: host.configuration.workerTimeout, doing: "taking a snapshot", in: host),
            !answer.snapshotPng.isEmpty else { return }
        await keepSnapshot(answer.snapshotPng, thumbnail: answer.thumbnailPng, in: host)
    }

    /// Keeps the picture a scene sent with its restoration activity (in the session's turn, so
    /// a discard cannot come between). A picture that is refused or cannot be written costs the
    /// switcher its picture, never the save.
    private func keepSnapshot(_ png: Data, thumbnail: Data, in host: isolated some SessionHost) async {
        do {
            var info = try SnapshotStore.validated(png)
            // A thumbnail that is refused costs only itself: the switcher scales a card-sized
            // picture, and one larger than a card without its thumbnail is not kept at all.
            do {
                if !thumbnail.isEmpty { info.thumbnail = try SnapshotStore.validatedThumbnail(thumbnail) }
            } catch {
                host.logger.warning("a scene's snapshot thumbnail was not kept", metadata: [
                    "SESSION_ID": "\(id)", "error": "\(error.message)",
                ])
            }
            try SnapshotStore.checkCardPicture(info)
            let kept = info.thumbnail == nil ? nil : thumbnail
            info.digest = SnapshotStore.digest(png, thumbnail: kept)
            if snapshot?.digest == info.digest { return }
            let snapshots = host.snapshots
            let id = self.id
            try await OffLoop.run { try snapshots.save(png, thumbnail: kept, for: id) }
            snapshot = info
        } catch {
            host.logger.warning("a scene's snapshot was not kept", metadata: [
                "SESSION_ID": "\(id)", "error": "\((error as? BrokerError)?.message ?? "\(error)")",
            ])
        }
    }
}
