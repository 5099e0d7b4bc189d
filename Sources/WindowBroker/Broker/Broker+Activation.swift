import Foundation
import IPCWire

/// The requests that change scenes: open (requestSceneSessionActivation), activate,
/// background, reclaim, close (discard), and actions sent to a scene.
extension Broker {
    public struct Outcome: Sendable {
        public var sessionID: UUID
        public var state: SceneState
        public var created: Bool
        public var notes: [String]
    }

    /// The reply for a request about `id`, with the session's state as it is now.
    private func outcome(_ id: UUID, created: Bool = false, notes: [String]) -> Outcome {
        Outcome(sessionID: id, state: sessions[id]?.state ?? .unattached, created: created, notes: notes)
    }

    public func open(_ request: ActivationRequest) async throws -> Outcome {
        try await withLifecycleLock {
            if let id = request.sessionID { _ = try existingSession(id) }
            let appID = request.appID ?? request.sessionID.flatMap { sessions[$0]?.appID } ?? ""
            guard let app = apps[appID] else {
                let known = apps.keys.sorted().joined(separator: ", ")
                throw BrokerError(.unknownApp, "no app '\(appID)' is installed (known: \(known.isEmpty ? "none" : known))")
            }
            switch try ActivationRouter.route(request, app: app, sessions: Array(sessions.values)) {
            case .existing(let id, let reason):
                var notes = ["\(reason): session \(id.uuidString.lowercased())"]
                notes += try await bringForward(id, activity: request.activity)
                return outcome(id, notes: notes)
            case .create(let configurationName, let role):
                try checkRoomForLaunch()
                let count = sessions.values.filter { $0.appID == app.id }.count
                guard count < self.configuration.maxSessionsPerApp else {
                    throw BrokerError(.resourceExhausted, "app '\(app.id)' already has \(count) sessions (limit \(self.configuration.maxSessionsPerApp)); close some first")
                }
                let title = request.activity.map { $0.title.isEmpty ? app.name : $0.title } ?? app.name
                let session = SceneSession(appID: app.id, configuration: configurationName, role: role, title: title)
                try await store.insert(session)
                sessions[session.id] = session
                emit(session.id, app: app.id, "created", configurationName)
                do {
                    let notes = try await bringForward(session.id, activity: request.activity)
                    return outcome(session.id, created: true, notes: notes)
                } catch let error as BrokerError {
                    throw BrokerError(error.code, "\(error.message) (session \(session.id.uuidString.lowercased()) was created and is kept, unattached)")
                }
            }
        }
    }

    public func activate(_ id: UUID) async throws -> Outcome {
        try await withLifecycleLock {
            _ = try existingSession(id)
            let notes = try await bringForward(id, activity: nil)
            return outcome(id, notes: notes)
        }
    }

    /// Makes room (focus policy), brings the session to foregroundActive (launching and
    /// restoring it when it has no process) and delivers the activity: in `willConnect` when
    /// it connects now, as `continue` when it was already connected.
    private func bringForward(_ id: UUID, activity: UserActivity?) async throws -> [String] {
        var notes: [String] = []
        if workers[id] == nil { try checkRoomForLaunch() }
        let scenes = sessions.values.map { FocusPolicy.Scene(id: $0.id, state: $0.state, lastActiveAt: $0.lastActiveAt) }
        for change in FocusPolicy.makeRoom(for: id, among: scenes, maxForeground: configuration.maxForegroundScenes) {
            do {
                notes += try await drive(change.id, to: change.target)
            } catch {
                notes.append("scene \(change.id.uuidString.lowercased()) could not change: \(error)")
            }
        }
        let wasConnected = sessions[id]?.state.isConnected ?? false
        notes += try await drive(id, to: .foregroundActive, options: .init(activities: activity.map { [$0] } ?? []))
        if wasConnected, let activity {
            _ = try await command(id, .continueActivity(.with { $0.activity = activity.wire }),
                                  timeout: configuration.workerTimeout, doing: "continue")
            emit(id, app: sessions[id]?.appID ?? "", "continue", activity.activityType)
        }
        return notes
    }

    public func background(_ id: UUID) async throws -> Outcome {
        try await withLifecycleLock {
            let session = try existingSession(id)
            guard session.state.isConnected else {
                throw BrokerError(.sessionNotConnected, "session \(id.uuidString.lowercased()) has no running process (\(session.state.rawValue)); activate it first")
            }
            let notes = try await drive(id, to: .background)
            return outcome(id, notes: notes)
        }
    }

    /// Takes a background scene's process away after saving its state; the session stays.
    public func reclaim(_ id: UUID, reason: DisconnectReason = .reclaimed) async throws -> Outcome {
        try await withLifecycleLock {
            let session = try existingSession(id)
            switch session.state {
            case .background: break
            case .unattached, .launching:
                throw BrokerError(.sessionNotConnected, "session \(id.uuidString.lowercased()) has no running process to reclaim")
            case .foregroundActive, .foregroundInactive:
                throw BrokerError(.invalidState, "session \(id.uuidString.lowercased()) is \(session.state.rawValue); only background scenes can be reclaimed (send it to the background first)")
            }
            let notes = try await drive(id, to: .reclaimed, reason: reason)
            return outcome(id, notes: notes)
        }
    }

    /// Discards a session (the user closed it in the switcher): a connected scene gets
    /// didDisconnect then didDiscardSceneSessions; otherwise running scenes of the app are told,
    /// or, with none running, the discard waits for the app's next launch. Its restoration
    /// data is deleted.
    public func close(_ id: UUID) async throws -> Outcome {
        try await withLifecycleLock {
            let session = try existingSession(id)
            var notes: [String] = []
            var delivered = false
            if workers[id] != nil {
                // Foreground scenes leave the foreground first; nothing is saved: the data goes.
                do {
                    notes += try await drive(id, to: .discarded, reason: .discarded)
                    delivered = true
                } catch {
                    notes.append("the scene did not disconnect cleanly: \(error)")
                    await terminate(id, reason: .discarded)
                }
            }
            let others = workers.filter { $0.key != id && sessions[$0.key]?.appID == session.appID }
            for (other, _) in others {
                do {
                    _ = try await command(other, .discardSessions(.with { $0.sessionIds = [id.uuidString.lowercased()] }),
                                          timeout: configuration.workerTimeout, doing: "didDiscardSceneSessions")
                    delivered = true
                } catch {
                    notes.append("scene \(other.uuidString.lowercased()) was not told: \(error)")
                }
            }
            try await store.discard(id, appID: session.appID, remember: !delivered)
            sessions[id] = nil
            discarded.insert(id)
            if !delivered { notes.append("no scene of '\(session.appID)' is running; the app is told at its next launch") }
            emit(id, app: session.appID, "discarded", delivered ? "delivered" : "pending")
            return outcome(id, notes: notes)
        }
    }

    /// Sends an action to a connected scene (`wmctl send`).
    public func perform(_ id: UUID, action: String, arguments: [String: PlistValue]) async throws -> Windowbroker_V1_ActionResult {
        let session = try existingSession(id)
        guard workers[id] != nil, session.state.isConnected else {
            throw BrokerError(.sessionNotConnected, "session \(id.uuidString.lowercased()) has no running process (\(session.state.rawValue)); activate it first")
        }
        let reply = try await command(id, .performAction(.with {
            $0.action = action
            $0.arguments = PlistValue.wire(dictionary: arguments)
        }), timeout: configuration.workerTimeout, doing: "perform(\(action))")
        guard case .actionResult(let result) = reply else {
            throw BrokerError(.workerFailed, "the scene answered perform(\(action)) with an unexpected message")
        }
        return result
    }

    /// Graceful stop: every connected scene saves its state (committed), is disconnected, and
    /// its process ends. Sessions come back, unattached, at the next start.
    public func shutdown() async {
        _ = try? await withLifecycleLock {
            for id in Array(workers.keys) {
                if sessions[id]?.state.isForeground == true {
                    _ = try? await drive(id, to: .background)
                }
                if sessions[id]?.state == .background {
                    _ = try? await drive(id, to: .reclaimed, reason: .brokerStopped)
                }
                if workers[id] != nil {
                    await terminate(id, reason: .brokerStopped)
                    await persist(id)
                }
            }
            for watcher in watchers.values { watcher.finish() }
            watchers.removeAll()
        }
    }
}
