import CLinuxShim
import Foundation
import Glibc
import IPCWire
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The control socket wmctl talks to: `<runtime-dir>/control.sock` in a 0700 directory.
/// Peers of another uid are refused (SO_PEERCRED). Each connection must start with Hello;
/// a peer that sends garbage gets an error if one can still be sent, and is closed. The
/// broker keeps serving everyone else.
public struct ControlServer: Sendable {
    /// Where connections come from: a path the broker binds, or a socket systemd passed.
    public enum Listener: Sendable {
        case path(String)
        case inherited(fd: Int32)
    }

    public let broker: Broker
    public let listener: Listener
    let logger: Logger
    private let connections: ControlConnections

    public init(broker: Broker, listener: Listener, logger: Logger) {
        self.broker = broker
        self.listener = listener
        self.logger = logger
        let configuration = broker.configuration
        connections = ControlConnections(
            limit: configuration.maxControlConnections, watcherLimit: configuration.maxWatchers,
            idleTimeout: configuration.controlIdleTimeout)
    }

    /// A connection accepted, not yet read (it is read once there is room for it).
    struct Accepted: Sendable {
        var channel: any Channel
        var id: ControlConnections.ID
    }

    /// Binds the socket path (after checking no other broker serves it), or adopts the socket
    /// systemd passed, and serves until cancelled. `onListening` runs once connections are accepted.
    public func run(onListening: @Sendable () async -> Void = {}) async throws {
        let maxFrame = broker.configuration.maxFrameBytes
        let budget = PartialFrameBudget(limit: broker.configuration.maxPartialFrameBytes)
        let (broker, logger, connections) = (broker, logger, connections)
        let numbers = ConnectionNumbers()
        let initializer: @Sendable (Channel) -> EventLoopFuture<Accepted> = { channel in
            let credentials: EventLoopFuture<wb_ucred?>
            if let provider = channel as? SocketOptionProvider {
                credentials = provider.unsafeGetSocketOption(
                    level: SocketOptionLevel(wb_sol_socket()), name: SocketOptionName(wb_so_peercred())
                ).map { Optional($0) }.recover { _ in nil }
            } else {
                credentials = channel.eventLoop.makeSucceededFuture(nil)
            }
            return credentials.flatMapThrowing { peer in
                let frameLimit = InboundFrameLimit(bytes: maxFrame)
                let id = numbers.next()
                try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                try channel.pipeline.syncOperations.addWireFraming(maxFrameBytes: maxFrame, limit: frameLimit, budget: budget)
                var answerer = ControlRequestHandler(broker: broker, logger: logger, connections: connections, connectionID: id)
                answerer.frameLimit = frameLimit
                try channel.pipeline.syncOperations.addHandler(ControlConnectionHandler(answerer: answerer, peer: peer))
                return Accepted(channel: channel, id: id)
            }
        }
        // Connections stay on the loop that accepted them: handing each to another loop cost
        // four wake-ups between the two threads before its first read.
        let loop = broker.requestLoop
        // Past the connection limit nothing is accepted (`ControlConnections.admit`): the next
        // clients wait in the kernel's listen backlog, and the async channel holds two at most.
        let bootstrap = ServerBootstrap(group: loop, childGroup: loop).serverChannelOption(.backlog, value: 4096)
        let backPressure = NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark(lowWatermark: 1, highWatermark: 2)
        let server: NIOAsyncChannel<Accepted, Never>
        var boundPath: String?
        switch listener {
        case .path(let socketPath):
            try await Self.prepare(socketPath: socketPath)
            server = try await bootstrap.bind(
                unixDomainSocketPath: socketPath, cleanupExistingSocketFile: true, serverBackPressureStrategy: backPressure,
                childChannelInitializer: initializer)
            chmod(socketPath, 0o600)
            boundPath = socketPath
            logger.info("control socket listening", metadata: ["path": "\(socketPath)"])
        case .inherited(let fd):
            server = try await bootstrap.bind(fd, serverBackPressureStrategy: backPressure, childChannelInitializer: initializer)
            logger.info("control socket passed by the service manager", metadata: ["fd": "\(fd)"])
        }
        defer { if let boundPath { unlink(boundPath) } }
        try await server.executeThenClose { inbound in
            await onListening()
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await connections.sweep() }
                defer { group.cancelAll() }
                for try await connection in inbound {
                    let channel = connection.channel
                    guard await connections.admit(connection.id, channel: channel) else {
                        channel.close(promise: nil)
                        break
                    }
                    // At once when it closed before it was admitted.
                    let id = connection.id
                    channel.closeFuture.whenComplete { _ in Task { await connections.leave(id) } }
                    channel.eventLoop.execute { channel.setReading(true) }
                }
            }
        }
    }

    /// Creates the runtime directory 0700 and removes a stale socket; refuses when a live
    /// broker answers on it.
    static func prepare(socketPath: String) async throws {
        let directory = (socketPath as NSString).deletingLastPathComponent
        try PrivateFiles.directory(directory, purpose: "runtime directory")
        guard FileManager.default.fileExists(atPath: socketPath) else { return }
        // A stale file refuses connections and is replaced by the bind; a live broker answers.
        if let live = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(unixDomainSocketPath: socketPath).get() {
            try? await live.close()
            throw BrokerError(.requestDenied, "another broker is already serving \(socketPath)")
        }
    }
}

/// Numbers connections in the order they are accepted (a UUID cost three system calls each).
private final class ConnectionNumbers: Sendable {
    private let last = Atomic<ControlConnections.ID>(0)
    func next() -> ControlConnections.ID { last.add(1, ordering: .relaxed).newValue }
}
