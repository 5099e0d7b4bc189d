import Foundation
import IPCWire

/// What workers tell the broker on their own: Hello, scene updates, and their exit.
extension Broker {
    func workerEnvelope(_ envelope: Envelope, from id: UUID, connection: WireConnection) async {
        guard let worker = workers[id], worker.connection === connection else { return }
        switch envelope.body {
        case .hello(let hello):
            if let problem = Self.checkWorkerHello(hello, session: id) {
                await connection.reply(to: envelope, error: problem)
                await worker.recordHello(.failure(problem))
                return
            }
            await connection.reply(to: envelope, with: .welcome(.current(brokerPID: getpid())))
            await worker.recordHello(.success(()))
        case .workerMessage(let message):
            guard case .sceneUpdate(let update)? = message.kind else {
                if case .restorationExtended? = message.kind {
                    emit(id, app: sessions[id]?.appID ?? "", "restorationExtended")
                }
                return
            }
            await apply(update, to: id, envelope: envelope, connection: connection)
        default:
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "workers may only send scene updates and replies"))
            }
        }
    }

    static func checkWorkerHello(_ hello: Windowbroker_V1_Hello, session: UUID) -> BrokerError? {
        if hello.protocolVersion != WireProtocol.version {
            return BrokerError(.unsupportedVersion, "worker speaks protocol \(hello.protocolVersion); this broker speaks \(WireProtocol.version)")
        }
        if hello.peerKind != .worker {
            return BrokerError(.handshakeRequired, "a worker connection must say Hello as a worker")
        }
        if UUID(uuidString: hello.sessionID) != session {
            return BrokerError(.permissionDenied, "this connection belongs to session \(session.uuidString.lowercased()), not \(hello.sessionID)")
        }
        return nil
    }

    private func apply(_ update: Windowbroker_V1_SceneUpdate, to id: UUID, envelope: Envelope, connection: WireConnection) async {
        guard let session = sessions[id] else { return }
        do {
            if update.hasUserActivity {
                sessions[id]?.currentActivity = try UserActivity(wire: update.userActivity, maxBytes: configuration.maxActivityBytes)
            }
            if !update.title.isEmpty { sessions[id]?.title = String(update.title.prefix(256)) }
            if update.hasActivationConditions {
                sessions[id]?.activationConditions = ActivationConditions(
                    canActivate: update.activationConditions.canActivate,
                    prefersToActivate: update.activationConditions.prefersToActivate)
            }
            if sessions[id] != session { await persist(id) }
            if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
        } catch {
            if envelope.id != 0 { await connection.reply(to: envelope, error: error) }
        }
    }

    /// The exit watcher saw the process go. Unplanned exits are crashes; the session stays,
    /// unattached, with its last committed restoration activity.
    func workerExited(_ id: UUID, worker: WorkerProcess, exit: WorkerExit) async {
        await worker.recordExit(exit)
        let intended = await worker.intendedEnd
        let reason: DisconnectReason
        switch (intended, exit) {
        case (let intended?, _): reason = intended
        case (nil, .exited(let code)): reason = .exited(code: code)
        case (nil, .signaled(let signal)): reason = .crashed(signal: signal)
        }
        guard workers[id] === worker else { return }
        let app = sessions[id]?.appID ?? ""
        workerGone(id, pid: worker.pid, reason: reason)
        if intended == nil {
            logger.warning("scene process ended unexpectedly", metadata: ["session": "\(id)", "pid": "\(worker.pid)", "reason": "\(reason)"])
            emit(id, app: app, "crashed", reason.description)
        } else {
            emit(id, app: app, "exited", reason.description)
        }
        await persist(id)
    }
}
