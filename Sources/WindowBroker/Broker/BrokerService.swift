import Logging
import ServiceLifecycle

/// The broker as a swift-service-lifecycle `Service`: serves the control socket until a
/// graceful shutdown (SIGTERM/SIGINT), then snapshots and stops every scene.
public struct BrokerService: Service {
    public let broker: Broker
    let logger: Logger
    let onListening: @Sendable () async -> Void

    public init(broker: Broker, logger: Logger, onListening: @escaping @Sendable () async -> Void = {}) {
        self.broker = broker
        self.logger = logger
        self.onListening = onListening
    }

    public func run() async throws {
        let server = ControlServer(broker: broker, socketPath: broker.configuration.socketPath, logger: logger)
        do {
            try await cancelWhenGracefulShutdown {
                try await server.run(onListening: onListening)
            }
        } catch is CancellationError {
            // Graceful shutdown: fall through to the snapshot.
        }
        logger.info("shutting down: saving every connected scene")
        await broker.shutdown()
        logger.info("stopped")
    }
}
