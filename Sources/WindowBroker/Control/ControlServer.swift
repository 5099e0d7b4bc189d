import CLinuxShim
import Foundation
import Glibc
import IPCWire
import Logging
import NIOCore
import NIOPosix

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

    struct Accepted: Sendable {
        var channel: WireChannel
        var peer: wb_ucred?
        /// The frames this connection may send (lowered once it watches).
        var frameLimit: InboundFrameLimit
        var handshake: ControlHandshake
        var fastPath: NIOLoopBound<ControlFastPath>
    }

    /// Binds the socket path (after checking no other broker serves it), or adopts the socket
    /// systemd passed, and serves until cancelled. `onListening` runs once connections are accepted.
    public func run(onListening: @Sendable () async -> Void = {}) async throws {
        let maxFrame = broker.configuration.maxFrameBytes
        let handshakeTimeout = broker.configuration.handshakeTimeout
        let budget = PartialFrameBudget(limit: broker.configuration.maxPartialFrameBytes)
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
                let handshake = ControlHandshake()
                let frameLimit = InboundFrameLimit(bytes: maxFrame)
                try channel.pipeline.syncOperations.addWireFraming(maxFrameBytes: maxFrame, limit: frameLimit, budget: budget)
                let fastPath = ControlFastPath(handshake: handshake, timeout: handshakeTimeout)
                try channel.pipeline.syncOperations.addHandler(fastPath)
                return Accepted(
                    channel: try WireChannel(wrappingChannelSynchronously: channel), peer: peer, frameLimit: frameLimit, handshake: handshake,
                    fastPath: NIOLoopBound(fastPath, eventLoop: channel.eventLoop))
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
                let connections = self.connections
                group.addTask { await connections.sweep() }
                defer { group.cancelAll() }
                var accepted: ControlConnections.ID = 0
                for try await connection in inbound {
                    accepted += 1
                    let id = accepted
                    guard await connections.admit(id, channel: connection.channel.channel) else {
                        connection.channel.channel.close(promise: nil)
                        break
                    }
                    group.addTask { await self.serve(connection, id: id) }
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

    private func serve(_ accepted: Accepted, id: ControlConnections.ID) async {
        var handler = ControlRequestHandler(broker: broker, logger: logger, connections: connections, connectionID: id)
        handler.frameLimit = accepted.frameLimit
        if let peer = accepted.peer { handler.requester = await broker.scene(speakingFor: peer.pid) }
        let speaker = handler
        defer { Task { [connections] in await connections.leave(id) } }
        try? await accepted.channel.executeThenClose { inbound, outbound in
            let connection = WireConnection(accepted.channel, outbound: outbound)
            if let peer = accepted.peer, peer.uid != getuid() {
                logger.warning("refused a control peer of another user", metadata: ["uid": "\(peer.uid)", "pid": "\(peer.pid)"])
                try? await connection.send(.error(BrokerError(.permissionDenied, "this broker serves uid \(getuid()) only").wire))
                return
            }
            // On the loop before the Welcome is written there (at once when this runs on that
            // loop, else queued ahead of the Welcome's write): the requests that follow it are
            // taken on the loop.
            let fastPath = accepted.fastPath
            connection.execute { fastPath.value.attach(speaker, connection: connection) }
            await speaker.serve(connection: connection, inbound: inbound, handshake: accepted.handshake)
        }
    }
}
