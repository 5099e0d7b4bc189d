import Glibc
import NIOCore
import NIOPosix
@testable import SceneWorker
import XCTest

/// The scene's Hello, seen from a broker played on the other end of a socket pair with the
/// wire's own connection: the runtime takes the broker's answer in a callback, and a refusal
/// must still end its run with the reason.
@MainActor
final class HandshakeTests: XCTestCase {
    final class SilentApp: AppDelegate {
        var launched = false
        func didFinishLaunching() { launched = true }
        func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate { fatalError("no scene in this test") }
    }

    func testARefusedHelloEndsTheRunWithTheBrokersReasonAndLaunchesNothing() async throws {
        let app = SilentApp()
        let (run, broker) = try await Self.start(app) { hello, connection, channel in
            await connection.reply(to: hello, error: BrokerError(.unsupportedVersion, "this broker speaks another protocol"))
            // As the broker does after a refusal: it hangs up, so a runtime that took the
            // refusal for a Welcome ends its run too (and fails below instead of waiting).
            try? await channel.close()
        }
        defer { broker.close(promise: nil) }
        do {
            try await Self.value(of: run, within: .seconds(30))
            XCTFail("the run ended as if the broker had welcomed the scene")
        } catch let error as BrokerError {
            XCTAssertEqual(error.code, .unsupportedVersion)
            XCTAssertTrue(error.message.contains("another protocol"), error.message)
        }
        XCTAssertFalse(app.launched, "the app launched without a Welcome")
    }

    func testAWelcomeLaunchesTheApp() async throws {
        let app = SilentApp()
        let (run, broker) = try await Self.start(app) { hello, connection, _ in
            await connection.reply(to: hello, with: .welcome(.current(brokerPID: getpid())))
        }
        for _ in 0..<500 where !app.launched { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertTrue(app.launched, "the app did not launch after the Welcome")
        broker.close(promise: nil)  // the broker goes: the run ends
        _ = try? await Self.value(of: run, within: .seconds(30))
    }

    /// The run's outcome, or a failure once `limit` has passed: a runtime that never ends its
    /// run turns the test red instead of stalling the suite.
    private static func value(of run: Task<Void, any Error>, within limit: Duration) async throws {
        final class FirstOutcome {
            var continuation: CheckedContinuation<Void, any Error>?
            func resume(_ outcome: Result<Void, any Error>) {
                continuation?.resume(with: outcome)
                continuation = nil
            }
        }
        let first = FirstOutcome()
        var watchdog: Task<Void, Never>?
        defer { watchdog?.cancel() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            first.continuation = continuation
            Task { @MainActor in first.resume(await run.result) }
            watchdog = Task { @MainActor in
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                first.resume(.failure(BrokerError(.timedOut, "the scene's run did not end within \(limit)")))
            }
        }
    }

    /// Runs `app`'s scene runtime on one end of a socket pair and a broker on the other, which
    /// hands the scene's Hello to `answer` (with the broker's channel, to hang up on); the
    /// broker's channel closes the pair.
    private static func start(
        _ app: some AppDelegate, answer: @escaping @Sendable (Envelope, WireConnection, any Channel) async -> Void
    ) async throws -> (run: Task<Void, any Error>, broker: any Channel) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw BrokerError(.resourceExhausted, "socketpair: \(String(cString: strerror(errno)))")
        }
        let runtime = SceneRuntime(app: app)
        let run = Task { @MainActor in try await runtime.run(socket: pair[1], sessionID: "") }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(pair[0]) { channel in
            channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel) }
        }
        Task {
            try? await channel.executeThenClose { inbound, outbound in
                let connection = WireConnection(channel, outbound: outbound)
                _ = await connection.readLoop(inbound) { envelope in
                    if case .hello = envelope.body { await answer(envelope, connection, channel.channel) }
                }
            }
        }
        return (run, channel.channel)
    }
}
