import ServiceLifecycle

/// The control server as a service: serves until the group stops, then refuses new work and
/// finishes the requests in flight (the broker's drain) before it closes the socket.
struct ControlService: Service {
    let server: ControlServer
    /// Runs once the socket accepts connections.
    let onReady: @Sendable () async -> Void

    func run() async throws {
        let (server, onReady, broker) = (server, onReady, server.broker)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run(onListening: onReady) }
            group.addTask {
                try await gracefulShutdown()
                await broker.drain()
            }
            // The drain is done (or the server failed): the socket closes.
            try await group.next()
            group.cancelAll()
        }
    }
}
