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
                if case .message = event { await worker.processed() }
            }
        }
    }

    private func workerEvent(_ event: WorkerEvent, from worker: WorkerHandle) async {
        let id = sessionShown(by: worker)?.id
        switch event {
        case .message(let envelope):
            guard let id else {
                // A prewarmed process not bound to a session yet: it has nothing to ask for.
                if envelope.id != 0 {
                    await worker.connection.reply(to: envelope, error: BrokerError(
                        .sessionNotConnected, "this process is not bound to a session yet (prewarmed); requests come after willConnect"))
                }
                return
            }
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

    private func workerMessage(_ envelope: Envelope, from id: SessionID, connection: WireConnection) async {
        switch envelope.body {
        case .workerMessage(let message):
            switch message.kind {
            case .sceneUpdate(let update)?:
                await apply(update, to: id, envelope: envelope, connection: connection)
            case .restorationExtended?:
                emit(id, app: drivers[id]?.session.appID ?? "", .restorationExtended)
                if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
            case .keyboardFocus(let change)?:
                keyboardFocus(id, focused: change.focused)
                if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
            case .closeRequested?:
                if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
                // Its own task: the disconnect waits for this scene's answers, which come
                // through this supervisor.
                Task { await self.windowClosed(id) }
            case .keyInput(let input)?:
                startSceneRequest(envelope, from: id, connection: connection) {
                    await self.keyInput(input, from: id)
                }
            case .storage(let update)?:
                do {
                    try await driver(id).applyStorage(update, in: self)
                    if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
                } catch {
                    logger.warning("refused a scene's storage change", metadata: ["session": "\(id)", "error": "\(error)"])
                    if envelope.id != 0 { await connection.reply(to: envelope, error: error as? BrokerError ?? BrokerError(.internalError, "\(error)")) }
                }
            default:
                // Every request is answered: the scene may be waiting for it before it replies.
                if envelope.id != 0 {
                    await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "the broker does not take this message unasked"))
                }
            }
        case .controlRequest(let request):
            // A scene asking for scenes (requestSceneSessionActivation and friends).
            startSceneRequest(envelope, from: id, connection: connection) {
                let handler = ControlRequestHandler(broker: self, logger: self.logger)
                return await handler.answer(request, from: id)
            }
        default:
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "workers may only send scene updates, scene requests and replies"))
            }
        }
    }

    /// Answers a scene's request in a task of its own: the answer may need this scene's
    /// lifecycle to move on first. At most `maxSceneRequestsInFlight` per scene: the SDK keeps
    /// one in flight, so only a misbehaving scene meets the limit, and it gets an answer, not
    /// a growing broker.
    private func startSceneRequest(
        _ envelope: Envelope, from id: SessionID, connection: WireConnection, _ answer: @escaping @Sendable () async -> Envelope.OneOf_Body
    ) {
        guard let driver = drivers[id] else { return }
        let inFlight = driver.requestsInFlight
        guard inFlight < configuration.maxSceneRequestsInFlight else {
            if !driver.refusingRequests {
                driver.refusingRequests = true
                logger.warning("a scene sends requests without waiting for answers; refusing the excess with resourceExhausted", metadata: [
                    "SESSION_ID": "\(id)", "inFlight": "\(inFlight)",
                ])
            }
            Task {
                await connection.reply(to: envelope, error: BrokerError(
                    .resourceExhausted, "this scene has \(inFlight) requests in flight (limit \(configuration.maxSceneRequestsInFlight)); wait for answers before sending more"))
            }
            return
        }
        driver.requestsInFlight += 1
        Task {
            await connection.reply(to: envelope, with: await answer())
            self.sceneRequestFinished(driver)
        }
    }

    /// A key with a command modifier from the scene's window: dispatched as `wmctl key` would,
    /// to this scene (the one whose window has the keyboard).
    private func keyInput(_ input: Windowbroker_V1_KeyInput, from id: SessionID) async -> Envelope.OneOf_Body {
        do {
            let shortcut = try KeyShortcut(parsing: input.shortcut)
            let outcome = try await key(shortcut, session: id)
            return .workerMessage(.with {
                $0.commandResult = .with {
                    $0.handledBy = outcome.handledBy?.rawValue ?? ""
                    $0.performed = outcome.result == .performed
                    $0.declineReason = outcome.detail
                    if let value = outcome.value { $0.value = value.wire }
                }
            })
        } catch {
            return .error(((error as? BrokerError) ?? BrokerError(.internalError, "\(error)")).wire)
        }
    }

    /// The user closed the scene's window: the scene disconnects as on iPadOS (its state saved
    /// first, its process ends) and its session stays in the switcher. Closing a window is not
    /// discarding it: that is the switcher's (`wmctl close`).
    func windowClosed(_ id: SessionID) async {
        guard hasConnectedScene(id) else { return }
        let returning = leaveFocus(id)
        do {
            try await onSession(id) { try await saveAndDisconnect(id, reason: .closedByUser) }
        } catch {
            logger.warning("a scene whose window was closed did not disconnect cleanly", metadata: [
                "SESSION_ID": "\(id)", "error": "\(error)",
            ])
        }
        for task in returning { _ = await task.value }
    }

    private func sceneRequestFinished(_ driver: SessionDriver) {
        driver.requestsInFlight -= 1
        if driver.requestsInFlight == 0 { driver.refusingRequests = false }
    }

    private func apply(_ update: Windowbroker_V1_SceneUpdate, to id: SessionID, envelope: Envelope, connection: WireConnection) async {
        do {
            try await driver(id).apply(update, in: self)
            if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
        } catch {
            logger.warning("refused a scene update", metadata: ["session": "\(id)", "error": "\(error)"])
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: error as? BrokerError ?? BrokerError(.internalError, "\(error)"))
            }
        }
    }
}
