import Foundation
import IPCWire

/// The scene's own lane (docs/LIFECYCLE.md): what a session's scene says unasked, handed to its
/// driver by the worker's supervisor one frame at a time, in the order it was read. Reports
/// (title, activity, conditions, storage) are applied and committed before they are
/// acknowledged; what needs an operation (a closed window, a key, a request for scenes) takes
/// its place in the mailbox or is answered in a task of its own. Every request gets an answer.
extension SessionDriver {
    func received(_ envelope: Envelope, on connection: WireConnection, in host: isolated some SessionHost) async {
        switch envelope.body {
        case .workerMessage(let message):
            switch message.kind {
            case .sceneUpdate(let update)?:
                await stageThenAcknowledge(envelope, on: connection, in: host, refusing: "a scene update", reindex: true) {
                    try self.stage(update, in: host)
                }
            case .storage(let update)?:
                await stageThenAcknowledge(envelope, on: connection, in: host, refusing: "a scene's storage change", reindex: false) {
                    try self.stageStorage(update, in: host)
                }
            case .restorationExtended?:
                host.emit(id, app: appID, .restorationExtended)
                await Self.acknowledge(envelope, on: connection)
            case .keyboardFocus(let change)?:
                host.keyboardFocus(id, focused: change.focused)
                await Self.acknowledge(envelope, on: connection)
            case .windowExported(let exported)?:
                windowHandle = exported.handle.isEmpty ? nil : exported.handle
                await Self.acknowledge(envelope, on: connection)
            case .closeRequested?:
                await Self.acknowledge(envelope, on: connection)
                // Its own task: the disconnect waits for this scene's answers, which come
                // through this very lane.
                let id = self.id
                Task { await host.windowClosed(id) }
            case .displayLost?:
                await Self.acknowledge(envelope, on: connection)
                let id = self.id
                Task { await host.compositorLost(id) }
            case .keyInput(let input)?:
                let id = self.id
                startRequest(envelope, on: connection, in: host) { await host.keyInput(input, from: id) }
            default:
                // Every request is answered: the scene may be waiting for it before it replies.
                if envelope.id != 0 {
                    await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "the broker does not take this message unasked"))
                }
            }
        case .controlRequest(let request):
            // A scene asking for scenes (requestSceneSessionActivation and friends).
            let id = self.id
            startRequest(envelope, on: connection, in: host) {
                await host.answer(request, from: id)
            }
        default:
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "workers may only send scene updates, scene requests and replies"))
            }
        }
    }

    /// Takes a report into the session, then acknowledges it once it is committed (the
    /// acknowledgement means "on disk"), or answers why it was refused; the scene's last
    /// accepted state stays.
    ///
    /// The lane goes on once the report is taken, while it commits: an answer the scene wrote
    /// right behind it (a lifecycle step) is acted on without waiting for the disk, and
    /// whatever that step writes commits behind the report (one writer, in order). One report
    /// commits at a time per scene: the next waits for it, so a scene that floods the broker
    /// with reports still meets its mailbox's limit.
    private func stageThenAcknowledge(
        _ envelope: Envelope, on connection: WireConnection, in host: isolated some SessionHost, refusing what: String, reindex: Bool,
        _ stage: () throws -> StagedChange?
    ) async {
        await reportCommitting?.value
        let change: StagedChange?
        do {
            change = try stage()
        } catch {
            await refuse(envelope, on: connection, in: host, what, error)
            return
        }
        guard let change else {
            await Self.acknowledge(envelope, on: connection)
            return
        }
        let id = self.id
        reportCommitting = Task {
            await host.commitReport(change, of: id, envelope, on: connection, refusing: what, reindex: reindex)
            // A finished task kept here would keep its stack for as long as the session lives.
            self.reportCommitting = nil
        }
    }

    func refuse(_ envelope: Envelope, on connection: WireConnection, in host: isolated some SessionHost, _ what: String, _ error: any Error) async {
        host.logger.warning("refused \(what)", metadata: ["session": "\(id)", "error": "\(error)"])
        if envelope.id != 0 {
            await connection.reply(to: envelope, error: error as? BrokerError ?? BrokerError(.internalError, "\(error)"))
        }
    }

    static func acknowledge(_ envelope: Envelope, on connection: WireConnection) async {
        if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
    }

    /// Answers a scene's request in a task of its own: the answer may need this scene's
    /// lifecycle to move on first. At most `maxSceneRequestsInFlight` at once: the SDK keeps
    /// one in flight, so only a misbehaving scene meets the limit, and it gets an answer, not
    /// a growing host.
    private func startRequest(
        _ envelope: Envelope, on connection: WireConnection, in host: isolated some SessionHost,
        _ answer: @escaping @Sendable () async -> Envelope.OneOf_Body
    ) {
        let limit = host.configuration.maxSceneRequestsInFlight
        guard requestsInFlight < limit else {
            if !refusingRequests {
                refusingRequests = true
                host.logger.warning("a scene sends requests without waiting for answers; refusing the excess with resourceExhausted", metadata: [
                    "SESSION_ID": "\(id)", "inFlight": "\(requestsInFlight)",
                ])
            }
            let inFlight = requestsInFlight
            Task {
                await connection.reply(to: envelope, error: BrokerError(
                    .resourceExhausted, "this scene has \(inFlight) requests in flight (limit \(limit)); wait for answers before sending more"))
            }
            return
        }
        requestsInFlight += 1
        Task {
            await connection.reply(to: envelope, with: await answer())
            self.requestFinished(in: host)
        }
    }

    private func requestFinished(in host: isolated some SessionHost) {
        requestsInFlight -= 1
        if requestsInFlight == 0 { refusingRequests = false }
    }
}

extension Broker {
    /// A staged report's second half (`SessionDriver.stageThenAcknowledge`): committed, then
    /// acknowledged and indexed; or refused, its fields back as they are on disk.
    func commitReport(
        _ change: SessionDriver.StagedChange, of id: SessionID, _ envelope: Envelope, on connection: WireConnection,
        refusing what: String, reindex: Bool
    ) async {
        guard let driver = drivers[id] else {
            // Discarded meanwhile: nothing to commit it to, and the scene still gets an answer.
            if envelope.id != 0 { await connection.reply(to: envelope, error: Self.noSuchSession(id)) }
            return
        }
        do {
            try await driver.commit(change, in: self)
        } catch {
            await driver.refuse(envelope, on: connection, in: self, what, error)
            return
        }
        await SessionDriver.acknowledge(envelope, on: connection)
        // After the acknowledgement, queued in the lane's order: the index is derived data
        // (rebuilt from the store when lost).
        if reindex { driver.reindex(in: self) }
    }
}
