import Glibc
@testable import SceneWorker
import XCTest

/// The scene's Hello, seen from a broker played by hand on a socket pair: the runtime takes
/// the broker's answer in a callback, and a refusal must still end its run with the reason.
@MainActor
final class HandshakeTests: XCTestCase {
    final class SilentApp: AppDelegate {
        var launched = false
        func didFinishLaunching() { launched = true }
        func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate { fatalError("no scene in this test") }
    }

    func testARefusedHelloEndsTheRunWithTheBrokersReasonAndLaunchesNothing() async throws {
        let (broker, scene) = try Self.socketPair()
        defer { close(broker) }
        let app = SilentApp()
        let runtime = SceneRuntime(app: app)
        let run = Task { @MainActor in try await runtime.run(socket: scene, sessionID: "") }
        let hello = try await Self.readEnvelope(from: broker)
        guard case .hello = hello.body else { return XCTFail("the scene's first frame is not its Hello: \(hello)") }
        var refusal = Envelope()
        refusal.replyTo = hello.id
        refusal.body = .error(BrokerError(.unsupportedVersion, "this broker speaks another protocol").wire)
        try Self.write(refusal, to: broker)
        do {
            try await run.value
            XCTFail("the run ended as if the broker had welcomed the scene")
        } catch let error as BrokerError {
            XCTAssertEqual(error.code, .unsupportedVersion)
            XCTAssertTrue(error.message.contains("another protocol"), error.message)
        }
        XCTAssertFalse(app.launched, "the app launched without a Welcome")
    }

    func testAWelcomeLaunchesTheApp() async throws {
        let (broker, scene) = try Self.socketPair()
        let app = SilentApp()
        let runtime = SceneRuntime(app: app)
        let run = Task { @MainActor in try await runtime.run(socket: scene, sessionID: "") }
        let hello = try await Self.readEnvelope(from: broker)
        var welcome = Envelope()
        welcome.replyTo = hello.id
        welcome.body = .welcome(.current(brokerPID: getpid()))
        try Self.write(welcome, to: broker)
        for _ in 0..<500 where !app.launched { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertTrue(app.launched, "the app did not launch after the Welcome")
        close(broker)  // the broker goes: the run ends
        _ = try? await run.value
    }

    private static func socketPair() throws -> (Int32, Int32) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw BrokerError(.resourceExhausted, "socketpair: \(String(cString: strerror(errno)))")
        }
        return (pair[0], pair[1])
    }

    /// One frame (4-byte big-endian length, then the envelope), read off the main actor.
    private static func readEnvelope(from fd: Int32) async throws -> Envelope {
        try await Task.detached {
            func read(_ count: Int) throws -> [UInt8] {
                var bytes = [UInt8](repeating: 0, count: count)
                var got = 0
                while got < count {
                    let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, count - got) }
                    guard n > 0 else { throw BrokerError(.connectionClosed, "the scene closed its socket") }
                    got += n
                }
                return bytes
            }
            let header = try read(4)
            let length = header.reduce(0) { $0 << 8 | Int($1) }
            return try Envelope(serializedBytes: try read(length))
        }.value
    }

    private static func write(_ envelope: Envelope, to fd: Int32) throws {
        let body: [UInt8] = try envelope.serializedBytes()
        let count = UInt32(body.count)
        let frame = [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)] + body
        let written = frame.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, frame.count) }
        guard written == frame.count else { throw BrokerError(.connectionClosed, "could not write to the scene") }
    }
}
