#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOPosix

/// One control request (`status`, `open`, `sessions`, ...).
package typealias ControlRequest = Windowbroker_V1_ControlRequest.OneOf_Kind
/// The answer to a control request.
package typealias ControlReply = Windowbroker_V1_ControlReply.OneOf_Kind
/// An event a `watch` streams.
package typealias LifecycleEvent = Windowbroker_V1_LifecycleEvent

/// A control connection to a running broker, as wmctl and tests use it.
package final class BrokerClient: Sendable {
    /// The framed connection underneath.
    public let connection: WireConnection
    /// Lifecycle events the broker pushes after a `watch` request.
    package let events: AsyncStream<LifecycleEvent>
    /// How long a request waits for its answer unless told otherwise.
    public let defaultTimeout: Duration

    init(connection: WireConnection, events: AsyncStream<LifecycleEvent>, defaultTimeout: Duration) {
        self.connection = connection
        self.events = events
        self.defaultTimeout = defaultTimeout
    }

    /// The default control socket: `$XDG_RUNTIME_DIR/windowbroker/control.sock`.
    /// `environment` looks one variable up; by default `getenv`, not `ProcessInfo`, whose first
    /// use builds the whole environment as a dictionary (2% of `wmctl status` in `perf`).
    public static func defaultSocketPath(environment: (String) -> String? = ProcessFacts.environment) -> String {
        let runtime = environment("XDG_RUNTIME_DIR").flatMap { $0.isEmpty ? nil : $0 } ?? "/run/user/\(getuid())"
        return runtime + "/windowbroker/control.sock"
    }

    /// The socket a client uses: `given` (its --socket) when there is one, else
    /// `$WINDOWBROKER_SOCKET`, else the default path.
    public static func socketPath(given: String?, environment: (String) -> String? = ProcessFacts.environment) -> String {
        if let given { return given }
        if let fromEnvironment = environment("WINDOWBROKER_SOCKET"), !fromEnvironment.isEmpty { return fromEnvironment }
        return defaultSocketPath(environment: environment)
    }

    /// Connects, says Hello, runs `body` with the connected client and closes.
    /// Failure to connect throws `brokerUnreachable`; a refused Hello throws the broker's error.
    ///
    /// `body`'s first request goes out right behind the Hello, without waiting for the
    /// Welcome: the broker reads a connection's frames in order and answers the Hello first,
    /// and one that refuses the Hello closes the connection, so nothing behind it is carried
    /// out. That saves a round trip (and the broker's start of a connection) per command.
    public static func withConnection<Result: Sendable>(
        socketPath: String,
        clientName: String = "wmctl",
        timeout: Duration = .seconds(30),
        _ body: @Sendable (BrokerClient) async throws -> Result
    ) async throws -> Result {
        let channel: WireChannel
        // On the caller's event loop when it runs on one (wmctl's main thread): its socket
        // and its tasks on one thread.
        let loop: any EventLoopGroup = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton
        // A broker that has all the clients it serves at once stops accepting, and its listen
        // backlog queues the next ones; a full backlog answers EAGAIN: come back shortly.
        var pause: Duration = .milliseconds(5)
        let giveUp = ContinuousClock.now + timeout
        while true {
            do {
                channel = try await ClientBootstrap(group: loop)
                    .connect(unixDomainSocketPath: socketPath) { channel in
                        channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel) }
                    }
                break
            } catch let error as IOError where error.errnoCode == EAGAIN && ContinuousClock.now + pause < giveUp {
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(200))
            } catch {
                throw BrokerError(.brokerUnreachable, unreachable(socketPath, error))
            }
        }
        return try await channel.executeThenClose { inbound, outbound in
            let connection = WireConnection(channel, outbound: outbound)
            let (events, eventSink) = AsyncStream.makeStream(of: LifecycleEvent.self, bufferingPolicy: .bufferingNewest(4096))
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await connection.readLoop(inbound) { envelope in
                        switch envelope.body {
                        case .lifecycleEvent(let event):
                            eventSink.yield(event)
                        case .error(let error):
                            // The broker says why it is closing the connection: that is what callers see.
                            await connection.failPending(BrokerError(wire: error))
                        default:
                            break
                        }
                    }
                    eventSink.finish()
                }
                defer { group.cancelAll() }
                let hello = connection.issue(.hello(.current(.control, clientName: clientName)), timeout: timeout, what: "the broker")
                let client = BrokerClient(connection: connection, events: events, defaultTimeout: timeout)
                let result: Result
                do {
                    result = try await body(client)
                } catch {
                    // A refused Hello explains the failure better than the closed connection
                    // that followed it.
                    try await welcomed(hello)
                    throw error
                }
                try await welcomed(hello)
                await connection.close(BrokerError(.connectionClosed, "the client closed the connection"))
                return result
            }
        }
    }

    /// Returns once the broker welcomed the Hello; throws its refusal.
    private static func welcomed(_ hello: EventLoopFuture<WireAnswer>) async throws {
        guard case .welcome = try await hello.get().accepted().body else {
            throw BrokerError(.malformedFrame, "the broker answered Hello with something other than Welcome")
        }
    }

    /// Why a connect failed, in words a user can act on (no library internals).
    static func unreachable(_ path: String, _ error: any Error) -> String {
        let start = "start it with `windowbrokerd` or `systemctl --user start windowbroker.socket`"
        let code = (error as? IOError)?.errnoCode
        let reason = code.map { String(cString: strerror($0)) }
        switch code {
        case ENOENT?, ECONNREFUSED?:
            return "windowbrokerd is not running at \(path); \(start)"
        case EACCES?, EPERM?:
            return "permission denied on \(path): the broker there belongs to another user (use --socket or $WINDOWBROKER_SOCKET for your own)"
        case ENOTDIR?, ENAMETOOLONG?:
            return "\(path) cannot be a broker socket (\(reason ?? "invalid path")); give one with --socket"
        default:
            return "cannot reach the broker at \(path) (\(reason ?? "\(error)")); \(start)"
        }
    }

    /// Sends one control request and returns the broker's reply, or throws its `BrokerError`.
    package func request(_ request: ControlRequest, timeout: Duration? = nil) async throws -> ControlReply {
        let reply = try await connection.request(
            .controlRequest(.with { $0.kind = request }), timeout: timeout ?? defaultTimeout, what: "the broker")
        guard case .controlReply(let control) = reply.body, let kind = control.kind else {
            throw BrokerError(.malformedFrame, "the broker sent an unexpected reply")
        }
        return kind
    }
}

extension BrokerError {
    /// The broker answered with a reply of another kind than the request asks for.
    package static let unexpectedReply = BrokerError(.malformedFrame, "the broker sent a reply of the wrong kind")
}

extension BrokerClient {
    /// Every session, page by page: however many there are, no reply outgrows a frame.
    package func allSessions(app: String = "") async throws -> [Windowbroker_V1_SessionInfo] {
        var sessions: [Windowbroker_V1_SessionInfo] = []
        var offset: UInt32 = 0
        repeat {
            guard case .sessions(let page) = try await request(.sessions(.with {
                $0.appID = app
                $0.offset = offset
            })) else { throw BrokerError.unexpectedReply }
            sessions += page.sessions
            offset = page.nextOffset
        } while offset != 0
        return sessions
    }
}
