import Foundation
import IPCWire

/// What workers tell the broker on their own, through their supervisors: scene updates,
/// restoration extensions, a closed connection, their exit.
extension Broker {
    /// Follows one worker's events until its supervisor has seen both the connection close and
    /// the process reaped.
    func supervise(_ worker: WorkerHandle) {
        Task { [weak self] in
            for await event in worker.events {
                await self?.workerEvent(event, from: worker)
            }
        }
    }

    private func workerEvent(_ event: WorkerEvent, from worker: WorkerHandle) async {
        let id = workers.first(where: { $0.value === worker })?.key
        switch event {
        case .message(let envelope):
            guard let id else { return }
            await workerMessage(envelope, from: id, connection: worker.connection)
        case .connectionClosed:
            // End of file is a failure whatever the process does next; the exit path (or the
            // reap below, for a process that runs on) records why.
            guard let id else {
                worker.kill()
                return
            }
            await reap(id)
        case .exited:
            await workerEnded(worker, reason: await reason(for: worker, fallback: .brokerStopped))
        }
    }

    private func workerMessage(_ envelope: Envelope, from id: UUID, connection: WireConnection) async {
        switch envelope.body {
        case .workerMessage(let message):
            switch message.kind {
            case .sceneUpdate(let update)?:
                await apply(update, to: id, envelope: envelope, connection: connection)
            case .restorationExtended?:
                emit(id, app: sessions[id]?.appID ?? "", .restorationExtended)
                if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
            case .storage(let update)?:
                do {
                    try applyStorage(update, to: id)
                    if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
                } catch {
                    logger.warning("refused a scene's storage change", metadata: ["session": "\(id)", "error": "\(error)"])
                    if envelope.id != 0 { await connection.reply(to: envelope, error: error) }
                }
            default:
                // Every request is answered: the scene may be waiting for it before it replies.
                if envelope.id != 0 {
                    await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "the broker does not take this message unasked"))
                }
            }
        case .controlRequest(let request):
            // A scene asking for scenes (requestSceneSessionActivation and friends). Its own
            // task: the answer may need this scene's lifecycle to move on first.
            Task {
                await self.sceneRequest(request, envelope: envelope, from: id, connection: connection)
            }
        default:
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "workers may only send scene updates, scene requests and replies"))
            }
        }
    }

    private func sceneRequest(_ request: Windowbroker_V1_ControlRequest, envelope: Envelope, from id: UUID, connection: WireConnection) async {
        let handler = ControlRequestHandler(broker: self, logger: logger)
        await connection.reply(to: envelope, with: await handler.answer(request, from: id))
    }

    private func apply(_ update: Windowbroker_V1_SceneUpdate, to id: UUID, envelope: Envelope, connection: WireConnection) async {
        do {
            try await apply(update, to: id)
            if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
        } catch {
            logger.warning("refused a scene update", metadata: ["session": "\(id)", "error": "\(error)"])
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: error as? BrokerError ?? BrokerError(.internalError, "\(error)"))
            }
        }
    }

    /// Takes a scene's title, current activity and activation conditions. An activity of a type
    /// its app never declared is refused and the last one stays.
    func apply(_ update: Windowbroker_V1_SceneUpdate, to id: UUID) async throws {
        guard let session = sessions[id] else { return }
        if update.hasUserActivity {
            let activity = try UserActivity(wire: update.userActivity, maxBytes: configuration.maxActivityBytes)
            if let app = apps[session.appID], !app.declares(activityType: activity.activityType) {
                throw BrokerError(.undeclaredActivityType, "app '\(app.id)' does not declare activity type '\(activity.activityType)'; the scene's last activity is kept")
            }
            sessions[id]?.currentActivity = activity
        }
        if !update.title.isEmpty { sessions[id]?.title = String(update.title.prefix(256)) }
        if update.hasActivationConditions {
            sessions[id]?.activationConditions = ActivationConditions(
                canActivate: update.activationConditions.canActivate,
                prefersToActivate: update.activationConditions.prefersToActivate)
        }
        if sessions[id] != session { persistSoon(id) }
    }

    /// Scene updates are served from memory at once and written at most once a second per
    /// session (and at every lifecycle step, which persists anyway): a flood of title changes
    /// costs a bounded number of writes, not one transaction each.
    func persistSoon(_ id: UUID) {
        guard persistScheduled.insert(id).inserted else { return }
        Task {
            try? await Task.sleep(for: .seconds(1))
            await self.flushScheduledPersist(id)
        }
    }

    private func flushScheduledPersist(_ id: UUID) async {
        guard persistScheduled.remove(id) != nil else { return }
        await persist(id)
    }
}
