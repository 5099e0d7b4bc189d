@testable import IPCWire
import Foundation
import NIOCore
import NIOEmbedded
import XCTest

/// Requests and their deadlines on an `EmbeddedChannel`, whose clock moves only when the test
/// moves it: each request fails at its own deadline and not before, an answered one never
/// fails, and the end of the connection fails what is left.
final class ReplyRouterTests: XCTestCase {
    private struct Sent {
        let id: UInt64
        let answer: EventLoopFuture<WireAnswer>
    }

    private func send(_ router: ReplyRouter, on channel: EmbeddedChannel, timeout: Duration, peer: String) throws -> Sent {
        let promise = channel.eventLoop.makePromise(of: WireAnswer.self)
        router.send(.body(.controlRequest(.with { $0.ping = .init() })), on: channel, timeout: timeout, peer: peer) {
            promise.completeWith($0.mapError { $0 })
        }
        let written = try XCTUnwrap(try channel.readOutbound(as: Envelope.self))
        return Sent(id: written.id, answer: promise.futureResult)
    }

    private func outcome(_ sent: Sent) -> Result<WireAnswer, any Error>? {
        var result: Result<WireAnswer, any Error>?
        sent.answer.whenComplete { result = $0 }
        return result
    }

    private func timedOutMessage(_ sent: Sent) -> String? {
        guard case .failure(let error as BrokerError)? = outcome(sent), error.code == .timedOut else { return nil }
        return error.message
    }

    func testEachRequestFailsAtItsOwnDeadlineAndAnAnsweredOneNever() throws {
        let router = ReplyRouter()
        let channel = EmbeddedChannel(handler: router)
        let slow = try send(router, on: channel, timeout: .seconds(5), peer: "the slow peer")
        let quick = try send(router, on: channel, timeout: .seconds(1), peer: "the quick peer")
        let answered = try send(router, on: channel, timeout: .seconds(3), peer: "the answering peer")

        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        XCTAssertNil(outcome(quick), "not before its deadline")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(timedOutMessage(quick), "the quick peer did not answer within 1 s")
        XCTAssertNil(outcome(slow))

        try channel.writeInbound(Envelope.with { $0.replyTo = answered.id; $0.controlReply = .init() })
        guard case .success(let answer)? = outcome(answered) else { return XCTFail("the answer completes its request") }
        XCTAssertEqual(answer.envelope.replyTo, answered.id)

        channel.embeddedEventLoop.advanceTime(by: .milliseconds(3_999))
        XCTAssertNil(outcome(slow), "the answered request's deadline passed: the other is still within its own")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(timedOutMessage(slow), "the slow peer did not answer within 5 s")
        guard case .success? = outcome(answered) else { return XCTFail("an answered request stays answered") }
    }

    func testALaterRequestWithAnEarlierDeadlineIsNotKeptWaitingForTheFirst() throws {
        let router = ReplyRouter()
        let channel = EmbeddedChannel(handler: router)
        let first = try send(router, on: channel, timeout: .seconds(30), peer: "the first")
        let second = try send(router, on: channel, timeout: .seconds(2), peer: "the second")
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        XCTAssertEqual(timedOutMessage(second), "the second did not answer within 2 s")
        XCTAssertNil(outcome(first))
        // Sent after the timer went off: it gets a deadline of its own.
        let third = try send(router, on: channel, timeout: .seconds(1), peer: "the third")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertEqual(timedOutMessage(third), "the third did not answer within 1 s")
        XCTAssertNil(outcome(first))
    }

    func testTheConnectionsEndFailsWhatWaitsAndNoTimerFiresAfterIt() throws {
        let router = ReplyRouter()
        let channel = EmbeddedChannel(handler: router)
        let waiting = try send(router, on: channel, timeout: .seconds(1), peer: "the peer")
        router.failAll(BrokerError(.connectionClosed, "the peer closed the connection"))
        guard case .failure(let error as BrokerError)? = outcome(waiting) else { return XCTFail("failed by the end") }
        XCTAssertEqual(error.code, .connectionClosed)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        let late = channel.eventLoop.makePromise(of: WireAnswer.self)
        router.send(.body(.controlRequest(.init())), on: channel, timeout: .seconds(1), peer: "the peer") {
            late.completeWith($0.mapError { $0 })
        }
        var refused: (any Error)?
        late.futureResult.whenFailure { refused = $0 }
        XCTAssertEqual((refused as? BrokerError)?.code, .connectionClosed, "a request after the end fails at once")
    }

    /// Requests go out without a promise: a frame the codec refuses still fails its request at
    /// once, with the codec's reason, and leaves the others waiting.
    func testARequestTooLargeForAFrameFailsAtOnceAndTheOthersWait() throws {
        let router = ReplyRouter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(EnvelopeCodec(maxFrameBytes: 64))
        try channel.pipeline.syncOperations.addHandler(router)
        let tooLarge = Heard()
        router.send(.body(.controlRequest(.with { $0.ping = .with { $0.payload = Data(repeating: 7, count: 100) } })),
                    on: channel, timeout: .seconds(1), peer: "the peer") { tooLarge.result = $0 }
        guard case .failure(let error)? = tooLarge.result else { return XCTFail("a refused frame fails its request at once") }
        XCTAssertEqual(error.code, .payloadTooLarge)
        XCTAssertTrue(error.message.contains("request exceeds the 64-byte frame limit"), error.message)
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "nothing of it was written")

        let small = Heard()
        router.send(.body(.controlRequest(.with { $0.ping = .init() })), on: channel, timeout: .seconds(1), peer: "the peer") { small.result = $0 }
        XCTAssertNotNil(try channel.readOutbound(as: ByteBuffer.self), "a request within the limit is written")
        XCTAssertNil(small.result, "and waits for its answer")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        guard case .failure(let late)? = small.result else { return XCTFail("until its deadline") }
        XCTAssertEqual(late.code, .timedOut)
    }
}

/// What a request heard, set on the embedded loop (this test's own thread).
private final class Heard: @unchecked Sendable {
    var result: Result<WireAnswer, BrokerError>?
}
