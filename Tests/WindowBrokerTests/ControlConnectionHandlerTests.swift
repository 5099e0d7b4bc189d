import Foundation
import IPCWire
import Logging
import NIOCore
import NIOEmbedded
@testable import WindowBroker
import WindowBrokerTesting
import XCTest

/// The one handler that serves a control connection, in NIO's test channel with a broker in
/// process behind it (fake scenes), the way swift-nio tests its handlers: the channel's clock
/// is the test's, so the handshake's and a reply's deadlines pass when the test says.
final class ControlConnectionHandlerTests: XCTestCase {
    private var running: InProcessBroker?

    override func tearDown() async throws {
        await running?.stop()
        running = nil
    }

    private func connection(
        _ configure: @escaping @Sendable (inout BrokerConfiguration) -> Void = { _ in }, before writes: HeldWrites? = nil
    ) async throws -> NIOAsyncTestingChannel {
        let running = try await InProcessBroker.start(apps: [.init("alpha")]) { configure(&$0) }
        self.running = running
        let connections = ControlConnections(limit: 8, watcherLimit: 2, idleTimeout: .seconds(60))
        let broker = running.broker
        let channel = try await NIOAsyncTestingChannel { channel in
            if let writes { try channel.pipeline.syncOperations.addHandler(writes) }
            var answerer = ControlRequestHandler(broker: broker, logger: Logger(label: "test"), connections: connections, connectionID: 1)
            answerer.frameLimit = InboundFrameLimit(bytes: 1 << 20)
            try channel.pipeline.syncOperations.addHandler(ControlConnectionHandler(answerer: answerer, peer: nil))
        }
        try await channel.connect(to: SocketAddress(unixDomainSocketPath: "/control.sock"))
        return channel
    }

    private static func hello() -> Envelope {
        var envelope = Envelope()
        envelope.id = 1
        envelope.body = .hello(.current(.control, clientName: "handler-test"))
        return envelope
    }

    private static func request(_ id: UInt64, _ kind: ControlRequest) -> Envelope {
        var envelope = Envelope()
        envelope.id = id
        envelope.body = .controlRequest(.with { $0.kind = kind })
        return envelope
    }

    private static func ping(_ id: UInt64) -> Envelope {
        request(id, .ping(.with { $0.payload = Data("\(id)".utf8) }))
    }

    /// The next `count` frames the handler writes, running the channel's loop for the jobs the
    /// answering tasks queue on it; fewer when they do not come within 10 s.
    private func written(_ channel: NIOAsyncTestingChannel, count: Int) async throws -> [Envelope] {
        var got: [Envelope] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while got.count < count, ContinuousClock.now < deadline {
            await channel.testingEventLoop.run()
            while let envelope = try await channel.readOutbound(as: Envelope.self) { got.append(envelope) }
            if got.count < count { try await Task.sleep(for: .milliseconds(5)) }
        }
        return got
    }

    private func greet(_ channel: NIOAsyncTestingChannel) async throws {
        try await channel.writeInbound(Self.hello())
        let welcome = try await written(channel, count: 1)
        guard case .welcome = welcome.first?.body else { return XCTFail("expected the Welcome, got \(welcome)") }
        XCTAssertEqual(welcome.first?.replyTo, 1)
    }

    func testAPeerThatSaysNoHelloIsToldWhyAndClosedAtTheDeadline() async throws {
        let silent = try await connection { $0.handshakeTimeout = .seconds(2) }
        await silent.testingEventLoop.advanceTime(by: .milliseconds(1_900))
        let early = try await silent.readOutbound(as: Envelope.self)
        XCTAssertNil(early, "nothing before the deadline")
        await silent.testingEventLoop.advanceTime(by: .milliseconds(100))
        let told = try await written(silent, count: 1)
        guard case .error(let error) = told.first?.body else { return XCTFail("expected an error, got \(told)") }
        XCTAssertEqual(error.code, .handshakeRequired)
        XCTAssertTrue(error.message.contains("no Hello within 2 s"), error.message)
        try await InProcessBroker.withDeadline(.seconds(10)) { try await silent.closeFuture.get() }
    }

    func testAGreetedPeerOutlivesTheDeadline() async throws {
        let greeted = try await connection { $0.handshakeTimeout = .seconds(2) }
        try await greet(greeted)
        await greeted.testingEventLoop.advanceTime(by: .seconds(5))
        try await greeted.writeInbound(Self.ping(2))
        let pong = try await written(greeted, count: 1)
        XCTAssertEqual(pong.map(\.replyTo), [2])
        XCTAssertTrue(greeted.isActive)
    }

    func testAFirstFrameThatIsNotHelloIsRefusedAndClosed() async throws {
        let channel = try await connection()
        try await channel.writeInbound(Self.ping(7))
        let told = try await written(channel, count: 1)
        guard case .error(let error) = told.first?.body else { return XCTFail("expected an error, got \(told)") }
        XCTAssertEqual(error.code, .handshakeRequired)
        XCTAssertEqual(told.first?.replyTo, 7)
        try await InProcessBroker.withDeadline(.seconds(10)) { try await channel.closeFuture.get() }
    }

    /// Requests written at once are answered once each, in order, whether answered on the loop
    /// (a ping) or by a task (the others), and one that waits on its scene holds the rest.
    func testRequestsAreAnsweredOnceEachInOrderBehindOneThatWaitsOnItsScene() async throws {
        let channel = try await connection()
        let running = try XCTUnwrap(running)
        try await greet(channel)
        var held = await running.workers.hold(app: "alpha") { if case .connect = $0 { true } else { false } }.makeAsyncIterator()
        try await channel.writeInbound(Self.ping(2))
        try await channel.writeInbound(Self.request(3, .open(.with { $0.appID = "alpha" })))
        try await channel.writeInbound(Self.ping(4))
        try await channel.writeInbound(Self.request(5, .status(.init())))
        try await channel.writeInbound(Self.ping(6))
        let connect = try await XCTUnwrapAsync(await held.next())
        let beforeTheScene = try await written(channel, count: 1)
        XCTAssertEqual(beforeTheScene.map(\.replyTo), [2])
        // The open waits on its scene; what came after it waits its turn.
        try await Task.sleep(for: .milliseconds(200))
        await channel.testingEventLoop.run()
        let meanwhile = try await channel.readOutbound(as: Envelope.self)
        XCTAssertNil(meanwhile, "nothing is answered out of turn")
        await connect.answer()
        let rest = try await written(channel, count: 4)
        XCTAssertEqual(rest.map(\.replyTo), [3, 4, 5, 6])
        guard case .controlReply(let opened) = rest.first?.body, case .sessionState = opened.kind else {
            return XCTFail("the open's answer: \(rest)")
        }
        let more = try await channel.readOutbound(as: Envelope.self)
        XCTAssertNil(more, "each request once")
    }

    /// A peer that does not read its answer: the write never completes, and at the reply
    /// deadline the connection is closed rather than holding the answer for ever.
    func testAPeerThatDoesNotReadItsAnswerIsClosedAtTheReplyDeadline() async throws {
        let unread = HeldWrites()
        let channel = try await connection({ $0.replyWriteTimeout = .seconds(3) }, before: unread)
        try await greet(channel)
        unread.holding = true
        try await channel.writeInbound(Self.request(2, .status(.init())))
        for _ in 0..<200 where unread.held == 0 {
            await channel.testingEventLoop.run()
            try await Task.sleep(for: .milliseconds(5))
        }
        XCTAssertEqual(unread.held, 1, "the answer was written and is not read")
        await channel.testingEventLoop.advanceTime(by: .seconds(2))
        XCTAssertTrue(channel.isActive, "before the deadline")
        await channel.testingEventLoop.advanceTime(by: .seconds(1))
        try await InProcessBroker.withDeadline(.seconds(10)) { try await channel.closeFuture.get() }
    }

    /// A reply the codec refuses (too large for a frame) is answered with that error instead:
    /// the request still gets exactly one answer.
    func testAReplyThatCannotBeWrittenIsAnsweredWithWhy() async throws {
        let refusing = HeldWrites()
        let channel = try await connection(before: refusing)
        try await greet(channel)
        refusing.refuseNext = true
        try await channel.writeInbound(Self.request(2, .status(.init())))
        let answer = try await written(channel, count: 1)
        XCTAssertEqual(answer.map(\.replyTo), [2])
        guard case .error(let error) = answer.first?.body else { return XCTFail("expected the refusal, got \(answer)") }
        XCTAssertEqual(error.code, .payloadTooLarge)
        XCTAssertTrue(error.message.contains("exceed the frame limit"), error.message)
        XCTAssertTrue(channel.isActive)
    }
}

/// An outbound handler in front of the connection's: it can hold writes (a peer that reads
/// nothing: the socket is full) or refuse the next one as the codec refuses a frame too large.
final class HeldWrites: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = Envelope
    typealias OutboundOut = Envelope
    var holding = false
    var refuseNext = false
    private(set) var held = 0
    private var promises: [EventLoopPromise<Void>] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if refuseNext {
            refuseNext = false
            promise?.fail(BrokerError(.payloadTooLarge, "a frame of 20 MiB"))
            return
        }
        guard holding else { return context.write(data, promise: promise) }
        held += 1
        if let promise { promises.append(promise) }
    }
}
