import Foundation
import IPCWire

/// What a request about a session did (open, activate, background, reclaim, close, refresh):
/// the session, its state now, and notes for people.
public struct SessionOutcome: Sendable {
    public var sessionID: SessionID
    public var state: SceneState
    public var created: Bool
    public var notes: [String]
    /// For open and activate: how the scene's process came to be.
    public var launch: LaunchKind?
    /// For open and activate: the presentation used (never `automatic`).
    public var presentation: Presentation?
}

/// The requests that change scenes: open (requestSceneSessionActivation), activate,
/// background, reclaim, close (discard), and actions sent to a scene.
extension Broker {
    /// The reply for a request about `id`, with the session's state as it is now.
    private func outcome(_ id: SessionID, created: Bool = false, notes: [String], launch: LaunchKind? = nil) -> SessionOutcome {
        SessionOutcome(sessionID: id, state: drivers[id]?.session.state ?? .unattached, created: created, notes: notes, launch: launch,
                       presentation: launch == nil ? nil : drivers[id]?.session.presentation)
    }

    /// A scene may activate, close and refresh only sessions of its own app.
    /// A session as a requesting scene may see it: another app's session is answered exactly
    /// as one that does not exist, so a scene cannot even learn that it exists.
    func visibleSession(_ id: SessionID, to requester: SessionID?) throws(BrokerError) -> SceneSession {
        let session = try existingSession(id)
        guard let requester, let mine = drivers[requester]?.session.appID, mine != session.appID else {
            if let requester { try checkRequester(requester, mayReach: session.appID) }
            return session
        }
        throw Self.noSuchSession(id)
    }

    static func noSuchSession(_ id: SessionID) -> BrokerError {
        BrokerError(.unknownSession, "no session \(id); `wmctl sessions` lists them")
    }

    func checkRequester(_ requester: SessionID?, mayReach appID: AppID) throws(BrokerError) {
        guard let requester else { return }
        guard let mine = drivers[requester]?.session.appID else {
            throw BrokerError(.permissionDenied, "the requesting scene \(requester) has no session any more")
        }
        guard mine == appID else {
            throw BrokerError(.permissionDenied, "a scene of '\(mine)' may only activate, close or refresh scenes of '\(mine)', not of '\(appID)'")
        }
    }

    /// The presentation an activation gets. A prominent scene that is up refuses the other
    /// activations of its own app (other apps go on), and there is one prominent scene at a
    /// time. `automatic` is prominent exactly when the standard placement would push a scene
    /// out of the foreground (the split is full), standard otherwise.
    func presentation(_ requested: Presentation, target: SessionID?, app: AppID) throws(BrokerError) -> Presentation {
        let blocking = focus.blockingProminent(for: target, app: app)
            ?? (requested == .prominent && focus.prominent != target ? focus.prominent : nil)
        if let blocking {
            throw BrokerError(.requestDenied, "session \(blocking) is presented prominently; dismiss it first (`wmctl close` or `wmctl background`)")
        }
        guard requested == .automatic else { return requested }
        return focus.standardPlacementEvicts(adding: target) ? .prominent : .standard
    }

    public func open(_ request: ActivationRequest) async throws -> SessionOutcome {
        if let id = request.sessionID { _ = try visibleSession(id, to: request.requestedBy) }
        let appID = request.appID ?? request.sessionID.flatMap { drivers[$0]?.session.appID } ?? AppID("")
        try checkRequester(request.requestedBy, mayReach: appID)
        guard let app = apps.manifests[appID] else {
            throw BrokerError(.unknownApp, "no app '\(appID)' is installed (known: \(apps.known))")
        }
        // The router reads each session where it is: copying out the app's sessions cost an
        // open as much as all of them.
        let route = try ActivationRouter.route(request, app: app, sessions: drivers.values.lazy.map(\.session))
        if let requester = request.requestedBy {
            let target: SessionID? = if case .existing(let id, _) = route { id } else { nil }
            emit(requester, app: app.id, .activationRequested(target: target, activityType: request.activity?.activityType ?? "", presentation: request.presentation))
        }
        switch route {
        case .existing(let id, let reason):
            let presentation = try presentation(request.presentation, target: id, app: app.id)
            let (notes, launch, _) = try await bringForward(
                id, activity: request.activity, presentation: presentation, requestedBy: request.requestedBy, activationToken: request.activationToken)
            return outcome(id, notes: ["\(reason): session \(id)"] + notes, launch: launch)
        case .create(let configurationName, let role):
            let presentation = try presentation(request.presentation, target: nil, app: app.id)
            try checkRoomForLaunch()
            let count = drivers.values.lazy.filter { $0.session.appID == app.id }.count
            guard count < self.configuration.maxSessionsPerApp else {
                throw BrokerError(.resourceExhausted, "app '\(app.id)' already has \(count) sessions (limit \(self.configuration.maxSessionsPerApp)); close some first")
            }
            // Capped on the way in, like a scene's own title updates: what is stored is listed.
            let title = String((request.activity.map { $0.title.isEmpty ? app.name : $0.title } ?? app.name).prefix(256))
            var session = SceneSession(appID: app.id, configuration: configurationName, role: role, title: title)
            session.presentation = presentation
            session.requestedBy = request.requestedBy
            // Known at once, so a concurrent request routes with it.
            let driver = SessionDriver(session)
            drivers[session.id] = driver
            // Its process starts while the insert commits; the launch step takes it.
            driver.startEarly(in: self)
            let created: Brought
            do {
                let brought: Result<Brought, any Error>
                do {
                    brought = .success(try await bringForward(
                        session.id, activity: request.activity, presentation: presentation, requestedBy: request.requestedBy,
                        activationToken: request.activationToken, storing: session))
                } catch {
                    brought = .failure(error)
                }
                // Left when the open failed before its launch step, or the session was closed
                // before its turn came.
                await driver.abandonEarlyStart(in: self)
                created = try brought.get()
            } catch {
                let notStored = (error as? SessionNotStored)?.reason
                guard let failure = notStored ?? (error as? BrokerError) else { throw error }
                guard notStored != nil || drivers[session.id]?.session.hasConnected == false else {
                    throw BrokerError(failure.code, "\(failure.message) (session \(session.id) was created and is kept, unattached)", retryAfterSeconds: failure.retryAfterSeconds)
                }
                // Its first launch failed, or its record could not be stored (deleting a row
                // that is not there succeeds): a session that never ran or is not in the store
                // is not kept (no empty switcher entries). A scene already told of it is told
                // it was discarded, so that the app deletes what it kept for it.
                try? await onSession(session.id) {
                    if notStored != nil, hasConnectedScene(session.id), await discardRunningScene(session.id).told {
                        emit(session.id, app: app.id, .discarded(delivered: true))
                    }
                    try await store.discard(session.id, appID: app.id, remember: false)
                    drivers[session.id] = nil
                    await unindex(session.id)
                }
                throw BrokerError(failure.code, "\(failure.message) (no session was kept)", retryAfterSeconds: failure.retryAfterSeconds)
            }
            if let inserted = created.inserted { try await makeOnDisk(inserted, session.id) }
            return outcome(session.id, created: true, notes: created.notes, launch: created.launch)
        }
    }

    /// Returns once the commit is on disk: when no synced commit came after it, the session's
    /// record is written again, synced (its scene reported nothing in its callbacks).
    private func makeOnDisk(_ commit: SessionStore.Commit, _ id: SessionID) async throws {
        guard !store.isOnDisk(commit), let driver = drivers[id] else { return }
        do {
            try await store.update(driver.session, attached: driver.worker != nil, synced: true)
        } catch {
            let failed = SessionStore.brokerError(error, doing: "sync session \(id) to the disk", path: store.path)
            throw BrokerError(failed.code, "\(failed.message) (its scene runs; a power loss may take the session back)")
        }
    }

    public func activate(_ id: SessionID, requestedBy: SessionID? = nil, retryRestore: Bool = false, activationToken: String? = nil) async throws -> SessionOutcome {
        let session = try visibleSession(id, to: requestedBy)
        var retryNote: String?
        if retryRestore {
            retryNote = try await onSession(id) { try await driver(id).retryQuarantined(in: self) }
        }
        if let requestedBy {
            emit(requestedBy, app: session.appID, .activationRequested(target: id, activityType: "", presentation: .standard))
        }
        let (notes, launch, _) = try await bringForward(
            id, activity: nil, presentation: try presentation(.standard, target: id, app: session.appID), requestedBy: requestedBy,
            activationToken: activationToken)
        return outcome(id, notes: (retryNote.map { [$0] } ?? []) + notes, launch: launch)
    }

    /// Brings the session to foregroundActive (launching and restoring it when it has no
    /// process), makes it the key scene and delivers the activity: in `willConnect` when it
    /// connects now, as `continue` when it was already connected. The focus coordinator decides
    /// at once what other scenes must do (the least recently used beyond the bound go to the
    /// background; a prominent scene dims its app's others); they do it on their own queues,
    /// once this scene is active (`Latch`). If this scene fails, the key scene before it is key
    /// again.
    /// A new session (`storing`) is handed to the store first in its turn, after the focus
    /// decision (an open that comes later takes focus from it even while this one is still
    /// being stored), and the drive does not wait for its commit; this returns once it is
    /// committed, or throws `SessionNotStored`.
    private func bringForward(
        _ id: SessionID, activity: UserActivity?, presentation: Presentation, requestedBy: SessionID?, activationToken: String? = nil,
        storing newSession: SceneSession? = nil
    ) async throws -> Brought {
        if drivers[id]?.worker == nil { try checkRoomForLaunch() }
        compositor.refusedKey[id] = nil  // an earlier activation's
        let app = drivers[id]?.session.appID ?? ""
        let decision = changeFocus {
            presentation == .prominent ? $0.present(id, app: app) : $0.bringForward(id, app: app, beside: requestedBy)
        }
        drivers[id]?.session.presentation = decision.presentation
        drivers[id]?.session.requestedBy = requestedBy
        defer { processes.pools.refillAfterAnswer(in: self) }  // after the launch, if it took a prewarmed worker
        // The other scenes' changes wait in their turns until this scene is active, or its
        // drive ended.
        let active = Latch()
        let others = decision.changes.map { change in refocusLater(change, after: active) }
        var notes: [String]
        let launch: LaunchKind
        var inserted: SessionStore.Commit?
        do {
            (notes, launch, inserted) = try await onSession(id) { () async throws -> Brought in
                let inserting = newSession.map { beginInsert($0) }
                let wasConnected = drivers[id]?.session.state.isConnected ?? false
                let drove: Result<(quarantineNote: String?, notes: [String]), any Error>
                do {
                    let quarantineNote = wasConnected ? nil : try await driver(id).quarantineIfPoisoned(in: self)
                    // didBecomeKey comes after didBecomeActive, and before a continued activity.
                    // It is told before the drive writes the session's record, which waits
                    // behind the commit of what the scene reported in its callbacks.
                    let notes = try await driver(id).drive(to: .foregroundActive, options: .init(activities: activity.map { [$0] } ?? []), succeeded: {
                        active.open()
                        await syncKey(id, activationToken: activationToken)
                    }, in: self)
                    // The compositor keeping the keyboard elsewhere is part of the answer.
                    let keyNote = compositor.refusedKey.removeValue(forKey: id)
                    drove = .success((quarantineNote, notes + (keyNote.map { [$0] } ?? [])))
                } catch {
                    drove = .failure(error)
                }
                // A record the store refused explains a failed drive too, and takes the session down.
                var inserted: SessionStore.Commit?
                if let inserting { inserted = try await stored(inserting, app: app) }
                let (quarantineNote, notes) = try drove.get()
                if wasConnected, let activity {
                    _ = try await command(id, .continueActivity(.with { $0.activity = activity.wire }),
                                          timeout: configuration.workerTimeout, doing: "continue")
                    emit(id, app: drivers[id]?.session.appID ?? "", .continued(activityType: activity.activityType))
                }
                return (quarantineNote.map { [$0] + notes } ?? notes, wasConnected ? .existing : drivers[id]?.worker?.launchKind ?? .spawned, inserted)
            }
        } catch {
            active.open()
            for change in changeFocus({ $0.bringForwardFailed(decision) }) {
                _ = await refocus(change)
            }
            for task in others { _ = await task.value }
            throw error
        }
        for task in others { notes += await task.value }
        // What the scene reported in its callbacks is on disk when the caller hears back: the
        // steps went on while it committed (`SessionDriver.stageThenAcknowledge`).
        await drivers[id]?.reportCommitting?.value
        return (notes, launch, inserted)
    }

    /// A new session whose record the store refused, perhaps after its scene was told of it.
    struct SessionNotStored: Error {
        let reason: BrokerError
    }

    /// What bringing a session forward did: notes for the requester, how its scene was
    /// launched, and for a new session the commit of its record (not yet synced).
    typealias Brought = (notes: [String], launch: LaunchKind, inserted: SessionStore.Commit?)

    /// Hands a new session's record to the store's writer, first thing in its turn: every
    /// later write about the session commits after it, so the drive goes on without waiting
    /// for the commit (a prewarmed scene is bound at once). Not synced on its own: the caller
    /// hears back once it is on disk (`makeOnDisk`), which the scene's first synced report
    /// almost always does for it.
    private func beginInsert(_ session: SceneSession) -> SessionStore.PendingInsert {
        emit(session.id, app: session.appID, .created(configuration: session.configuration))
        return store.beginInsert(session)
    }

    /// The commit of a record `beginInsert` handed on; one the store refused is
    /// `SessionNotStored`, which the open answers by taking the session down.
    private func stored(_ pending: SessionStore.PendingInsert, app: AppID) async throws -> SessionStore.Commit {
        do {
            return try await pending.committed()
        } catch {
            throw SessionNotStored(reason: SessionStore.brokerError(error, doing: "create a session of '\(app)'", path: store.path))
        }
    }

    /// A focus change the coordinator decided for another scene, placed in that scene's queue
    /// now (the moment it is decided) and run in its turn by a task of its own.
    /// With `after`, the change waits in that turn until the latch opens.
    func refocusLater(_ change: FocusCoordinator.Change, after latch: Latch? = nil) -> Task<[String], Never> {
        laterOnSession(change.id, orElse: []) {
            await latch?.opened()
            return await self.refocusInTurn(change)
        }
    }

    /// A focus change run in the scene's turn. It never launches a scene (one whose process is
    /// gone has left the foreground anyway), and it does nothing when focus has moved on since
    /// it was decided: a later decision about the scene wins over an older one still queued.
    func refocus(_ change: FocusCoordinator.Change) async -> [String] {
        (try? await onSession(change.id) { await refocusInTurn(change) }) ?? []
    }

    private func refocusInTurn(_ change: FocusCoordinator.Change) async -> [String] {
        do {
            guard drivers[change.id]?.session.state.isConnected == true, focus.stillWants(change) else { return [] }
            return try await drive(change.id, to: change.target)
        } catch {
            return ["scene \(change.id) could not change: \(error)"]
        }
    }

    /// `id` leaves the foreground. When it was presented prominently, the scene it covered is
    /// active again: that change runs on its own queue; the returned tasks finish with it.
    @discardableResult
    func leaveFocus(_ id: SessionID) -> [Task<[String], Never>] {
        changeFocus { $0.remove(id) }.map { change in refocusLater(change) }
    }

    public func background(_ id: SessionID) async throws -> SessionOutcome {
        _ = try existingSession(id)
        let returning = leaveFocus(id)
        var result = try await onSession(id) {
            let session = try existingSession(id)
            guard session.state.isConnected else {
                throw BrokerError(.sessionNotConnected, "session \(id) has no running process (\(session.state.rawValue)); activate it first")
            }
            let notes = try await drive(id, to: .background, reportSaveFailure: true)
            return outcome(id, notes: notes)
        }
        for task in returning { result.notes += await task.value }
        return result
    }

    /// Takes a background scene's process away after saving its state; the session stays. An
    /// explicit reclaim whose save fails is refused (the scene runs on) unless `force`; the
    /// memory-pressure policy decides for itself (`reason: .memoryPressure`).
    public func reclaim(_ id: SessionID, reason: DisconnectReason = .reclaimed, force: Bool = false) async throws -> SessionOutcome {
        try await onSession(id) {
            let session = try existingSession(id)
            switch session.state {
            case .background: break
            case .unattached, .launching:
                throw BrokerError(.sessionNotConnected, "session \(id) has no running process to reclaim")
            case .foregroundActive, .foregroundInactive:
                throw BrokerError(.invalidState, "session \(id) is \(session.state.rawValue); only background scenes can be reclaimed (send it to the background first)")
            }
            let explicit = reason == .reclaimed && !force
            let notes = try await drive(id, to: .reclaimed, reason: reason, requireSave: explicit)
            return outcome(id, notes: notes)
        }
    }

    /// Discards a session (the user closed it in the switcher): a connected scene gets
    /// didDisconnect then didDiscardSceneSessions; otherwise running scenes of the app are told,
    /// or, with none running, the discard waits for the app's next launch. Its restoration
    /// data is deleted.
    public func close(_ id: SessionID, requestedBy: SessionID? = nil, dismissal: Dismissal = .standard) async throws -> SessionOutcome {
        let target = try visibleSession(id, to: requestedBy)
        if let requestedBy { emit(requestedBy, app: target.appID, .destructionRequested(target: id, dismissal: dismissal)) }
        let returning = leaveFocus(id)
        var result = try await onSession(id) {
            let session = try existingSession(id)
            var notes: [String] = []
            var delivered = false
            // Committed first, as a discard still to deliver: when the store cannot take it (a
            // full disk), nothing has been told and the session stays; once it is on disk, the
            // app is told, and the pending entry goes when that worked.
            do {
                try await store.discard(id, appID: session.appID, remember: true)
            } catch {
                throw SessionStore.brokerError(error, doing: "discard session \(id)", path: store.path)
            }
            if drivers[id]?.worker != nil {
                let discarded = await discardRunningScene(id)
                notes += discarded.notes
                delivered = discarded.told
            }
            // Exactly once: the scene's own process was told above; otherwise one running
            // process of the app (most recently active first) is, else the next launch is.
            let others = processes.shown.values.compactMap { drivers[$0]?.session }
                .filter { $0.id != id && $0.appID == session.appID && $0.state.isConnected }
                .sorted { $0.lastActiveAt > $1.lastActiveAt }
            for other in others where !delivered {
                do {
                    _ = try await command(other.id, .discardSessions(.with { $0.sessionIds = [id.description] }),
                                          timeout: configuration.workerTimeout, doing: "didDiscardSceneSessions")
                    delivered = true
                } catch {
                    notes.append("scene \(other.id) was not told: \(error)")
                }
            }
            if delivered {
                try? await store.removePendingDiscards([id], appID: session.appID)
            } else {
                apps.addPendingDiscard(id, of: session.appID)
            }
            drivers[id] = nil
            discarded.insert(id)
            // Its picture goes with its other data.
            drivers[id]?.snapshot = nil
            let snapshots = self.snapshots
            _ = try? await OffLoop.run { snapshots.delete(id) }
            // After the session is gone: nothing re-adds it once it is out of the index.
            await unindex(id)
            workerOutput.forget(id)
            if !delivered { notes.append("no scene of '\(session.appID)' is running; the app is told at its next launch") }
            emit(id, app: session.appID, .discarded(delivered: delivered))
            return outcome(id, notes: notes)
        }
        for task in returning { result.notes += await task.value }
        return result
    }

    /// Tells a session's running scene that the session is discarded: didDisconnect, then
    /// didDiscardSceneSessions, so that its app deletes what it kept for it. A foreground scene
    /// leaves the foreground first; nothing is saved: the data goes. A scene that does not go
    /// cleanly is stopped, and was not told.
    private func discardRunningScene(_ id: SessionID) async -> (told: Bool, notes: [String]) {
        do {
            return (true, try await drive(id, to: .discarded, reason: .discarded))
        } catch {
            await terminate(id, reason: .discarded)
            return (false, ["the scene did not disconnect cleanly: \(error)"])
        }
    }

    /// requestSceneSessionRefresh: a connected scene is asked for a fresh title and activity
    /// (its switcher entry); an unattached one keeps showing its last saved state.
    public func refresh(_ id: SessionID, requestedBy: SessionID? = nil) async throws -> SessionOutcome {
        let session = try visibleSession(id, to: requestedBy)
        if let requestedBy { emit(requestedBy, app: session.appID, .refreshRequested(target: id)) }
        guard hasConnectedScene(id) else {
            return outcome(id, notes: ["session \(id) has no running process; its switcher entry shows its last saved state"])
        }
        let reply = try await command(id, .refresh(.init()), timeout: configuration.workerTimeout, doing: "refresh")
        guard case .sceneUpdate(let update) = reply else {
            throw BrokerError(.workerFailed, "the scene answered refresh with an unexpected message")
        }
        let driver = try driver(id)
        try await driver.apply(update, in: self)
        driver.reindex(in: self)
        return outcome(id, notes: ["refreshed: \(drivers[id]?.session.title ?? "")"])
    }

    /// Sends an action to a connected scene (`wmctl send`). Not in the session's turn: an
    /// action may make the scene ask for things (open a window, close itself) that need its
    /// turn, and the lifecycle never waits behind an action.
    public func perform(_ id: SessionID, action: String, arguments: [String: PlistValue]) async throws -> ActionOutcome {
        let session = try existingSession(id)
        guard hasConnectedScene(id) else {
            throw BrokerError(.sessionNotConnected, "session \(id) has no running process (\(session.state.rawValue)); activate it first")
        }
        let reply = try await command(id, .performAction(.with {
            $0.action = action
            $0.arguments = PlistValue.wire(dictionary: arguments)
        }), timeout: configuration.workerTimeout, doing: "perform(\(action))")
        guard case .actionResult(let result) = reply else {
            throw BrokerError(.workerFailed, "the scene answered perform(\(action)) with an unexpected message")
        }
        do {
            return try ActionOutcome(wire: result)
        } catch {
            throw BrokerError(.workerFailed, "the scene answered perform(\(action)) with a value that is not a property list: \(error.message)")
        }
    }
}
