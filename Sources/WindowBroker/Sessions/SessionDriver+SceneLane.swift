import Foundation
import IPCWire

/// The scene's own lane (docs/LIFECYCLE.md): what a session's scene says unasked, handed to its
/// driver by the worker's supervisor one frame at a time, in the order it was read. Reports
/// (title, activity, conditions, storage) are applied and committed before they are
/// acknowledged; what needs an operation (a closed window, a key, a request for scenes) takes
/// its place in the mailbox or is answered in a task of its own. Every request gets an answer.
extension SessionDriver {
    func received(_ envelope: Envelope, on connection: WireConnection, in broker: isolated Broker) async {
        switch envelope.body {
        case .workerMessage(let message):
            switch message.kind {
            case .sceneUpdate(let update)?:
                await acknowledge(envelope, on: connection, in: broker, refusing: "a scene update") {
                    try await self.apply(update, in: broker)
                }
                // After the acknowledgement, still in the lane's order: the index is derived data
                // (rebuilt from the store when lost), and writing it took longer than the commit.
                await reindex(in: broker)
            case .storage(let update)?:
                await acknowledge(envelope, on: connection, in: broker, refusing: "a scene's storage change") {
                    try await self.applyStorage(update, in: broker)
                }
            case .restorationExtended?:
                broker.emit(id, app: appID, .restorationExtended)
                await Self.acknowledge(envelope, on: connection)
            case .keyboardFocus(let change)?:
                broker.keyboardFocus(id, focused: change.focused)
                await Self.acknowledge(envelope, on: connection)
            case .closeRequested?:
                await Self.acknowledge(envelope, on: connection)
                // Its own task: the disconnect waits for this scene's answers, which come
                // through this very lane.
                let id = self.id
                Task { await broker.windowClosed(id) }
            case .keyInput(let input)?:
                let id = self.id
                startRequest(envelope, on: connection, in: broker) { await broker.keyInput(input, from: id) }
            default:
                // Every request is answered: the scene may be waiting for it before it replies.
                if envelope.id != 0 {
                    await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "the broker does not take this message unasked"))
                }
            }
        case .controlRequest(let request):
            // A scene asking for scenes (requestSceneSessionActivation and friends).
            let id = self.id
            startRequest(envelope, on: connection, in: broker) {
                await ControlRequestHandler(broker: broker, logger: broker.logger).answer(request, from: id)
            }
        default:
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "workers may only send scene updates, scene requests and replies"))
            }
        }
    }

    /// Applies a report, then acknowledges it (the acknowledgement means "committed"), or
    /// answers why it was refused; the scene's last accepted state stays.
    private func acknowledge(
        _ envelope: Envelope, on connection: WireConnection, in broker: isolated Broker, refusing what: String,
        _ apply: () async throws -> Void
    ) async {
        do {
            try await apply()
            await Self.acknowledge(envelope, on: connection)
        } catch {
            broker.logger.warning("refused \(what)", metadata: ["session": "\(id)", "error": "\(error)"])
            if envelope.id != 0 {
                await connection.reply(to: envelope, error: error as? BrokerError ?? BrokerError(.internalError, "\(error)"))
            }
        }
    }

    private static func acknowledge(_ envelope: Envelope, on connection: WireConnection) async {
        if envelope.id != 0 { await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() })) }
    }

    /// Answers a scene's request in a task of its own: the answer may need this scene's
    /// lifecycle to move on first. At most `maxSceneRequestsInFlight` at once: the SDK keeps
    /// one in flight, so only a misbehaving scene meets the limit, and it gets an answer, not
    /// a growing broker.
    private func startRequest(
        _ envelope: Envelope, on connection: WireConnection, in broker: isolated Broker,
        _ answer: @escaping @Sendable () async -> Envelope.OneOf_Body
    ) {
        let limit = broker.configuration.maxSceneRequestsInFlight
        guard requestsInFlight < limit else {
            if !refusingRequests {
                refusingRequests = true
                broker.logger.warning("a scene sends requests without waiting for answers; refusing the excess with resourceExhausted", metadata: [
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
            self.requestFinished(in: broker)
        }
    }

    private func requestFinished(in broker: isolated Broker) {
        requestsInFlight -= 1
        if requestsInFlight == 0 { refusingRequests = false }
    }
}
