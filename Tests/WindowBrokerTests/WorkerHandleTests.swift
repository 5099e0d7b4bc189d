import CLinuxShim
import Foundation
import IPCWire
import NIOCore
import NIOPosix
@testable import WindowBroker
import XCTest

/// The supervisor of one worker connection, over a real socket pair with the test as the
/// worker: a reply is acted on only after what the worker wrote before it.
final class WorkerHandleTests: XCTestCase {
    /// The scene writes a report and its answer to a command back to back (as the SDK does,
    /// without waiting for the report's acknowledgement). The answer says two frames came
    /// before it (the Hello and the report), and waiting for them returns only once the broker
    /// is done with the report.
    func testAnAnswerWaitsForTheFramesReadBeforeIt() async throws {
        let (handle, peer) = try await Self.supervisedPair(pid: 999_999)
        let worker = Task {
            try await peer.executeThenClose { inbound, outbound in
                try await outbound.write(WorkerHandleTests.hello)
                for try await envelope in inbound {
                    guard case .workerCommand = envelope.body else { continue }
                    var report = Envelope()
                    report.id = 2
                    report.body = .workerMessage(.with { $0.sceneUpdate = .with { $0.title = "Written in willConnect" } })
                    var answer = Envelope()
                    answer.replyTo = envelope.id
                    answer.body = .workerMessage(.with { $0.connected = .init() })
                    try await outbound.write(contentsOf: [report, answer])
                    return
                }
            }
        }
        try await handle.waitForHello(timeout: .seconds(10))
        let answer = try await handle.connection.answer(to: .workerCommand(.with { $0.connect = .init() }), timeout: .seconds(10))
        XCTAssertEqual(answer.framesBefore, 2, "the Hello and the report were read before the answer")
        guard case .connected? = { if case .workerMessage(let message) = answer.envelope.body { message.kind } else { nil } }() else {
            return XCTFail("\(answer.envelope)")
        }
        // The Hello is handled; the report is not yet.
        await handle.waitForFrames(1)
        var events = handle.events.makeAsyncIterator()
        guard case .message(let report)? = await events.next(), case .workerMessage(let message) = report.body,
              case .sceneUpdate(let update)? = message.kind else {
            return XCTFail("the report comes to the broker as a message")
        }
        XCTAssertEqual(update.title, "Written in willConnect")

        let done = Flag()
        let waiting = Task {
            await handle.waitForFrames(answer.framesBefore)
            await done.set()
        }
        try await Task.sleep(for: .milliseconds(200))
        let early = await done.value
        XCTAssertFalse(early, "the answer is not acted on while the report before it is still being handled")
        await handle.processed()
        await waiting.value
        let after = await done.value
        XCTAssertTrue(after)
        try await worker.value
    }
}

extension WorkerHandleTests {
    /// A worker that floods the broker: once `mailboxLimit` messages wait for the broker, the
    /// connection stops reading, so what the worker sends beyond a read's worth stays in its
    /// socket; as the broker gets through them it reads again, and every message arrives, in
    /// order.
    func testAFloodingWorkerIsReadOnlyAsFastAsItsMessagesAreHandled() async throws {
        let (handle, peer) = try await Self.supervisedPair(pid: 999_998)
        let count = 20_000
        let worker = Task {
            try await peer.executeThenClose { _, outbound in
                try await outbound.write(WorkerHandleTests.hello)
                try await outbound.write(contentsOf: (0..<count).map { index in
                    var report = Envelope()
                    report.body = .workerMessage(.with { $0.sceneUpdate = .with { $0.title = "\(index)" } })
                    return report
                })
                // Open until the broker has taken everything.
                try await Task.sleep(for: .seconds(60))
            }
        }
        try await handle.waitForHello(timeout: .seconds(10))
        // Nothing is handled yet: reading stops at the limit, a read's worth of frames past it.
        var waited = 0
        while handle.unprocessedCount < WorkerHandle.mailboxLimit, waited < 500 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        try await Task.sleep(for: .milliseconds(500))
        let held = handle.unprocessedCount
        XCTAssertGreaterThanOrEqual(held, WorkerHandle.mailboxLimit)
        XCTAssertLessThan(held, count / 2, "the connection stopped reading: \(held) of \(count) messages read")
        var titles: [String] = []
        for await event in handle.events {
            guard case .message(let envelope) = event, case .workerMessage(let message) = envelope.body,
                  case .sceneUpdate(let update)? = message.kind else { continue }
            titles.append(update.title)
            await handle.processed()
            if titles.count == count { break }
        }
        XCTAssertEqual(titles, (0..<count).map { "\($0)" }, "every message arrives, in order")
        XCTAssertEqual(handle.unprocessedCount, 0)
        worker.cancel()
        _ = try? await worker.value
    }
}

extension WorkerHandleTests {
    /// A worker that says Hello twice, the second time for a session that is not its own: the
    /// first Hello decides, and each gets its own answer, in order.
    func testTheFirstHelloDecides() async throws {
        let (handle, peer) = try await Self.supervisedPair(pid: 999_997)
        let answers = try await peer.executeThenClose { inbound, outbound -> [String] in
            var forged = WorkerHandleTests.hello
            forged.id = 2
            forged.body = .hello(.current(.worker, clientName: "test", sessionID: SessionID().description))
            try await outbound.write(contentsOf: [WorkerHandleTests.hello, forged])
            var answers: [String] = []
            for try await envelope in inbound {
                switch envelope.body {
                case .welcome: answers.append("welcome \(envelope.replyTo)")
                case .error(let error): answers.append("\(BrokerError(wire: error).code) \(envelope.replyTo)")
                default: continue
                }
                if answers.count == 2 { break }
            }
            return answers
        }
        XCTAssertEqual(answers, ["welcome 1", "permissionDenied 2"])
        try await handle.waitForHello(timeout: .seconds(10))
        let said = await handle.saidHello
        XCTAssertTrue(said, "the second Hello changed nothing")
    }

    /// What the test's worker says first, as a prewarmed process does.
    static let hello: Envelope = {
        var hello = Envelope()
        hello.id = 1
        hello.body = .hello(.current(.worker, clientName: "test", sessionID: ""))
        return hello
    }()

    /// A supervisor over one end of a socket pair, and the other end as the test's worker.
    static func supervisedPair(pid: pid_t) async throws -> (handle: WorkerHandle, peer: WireChannel) {
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, wb_sock_stream() | wb_sock_cloexec(), 0, &pair), 0)
        let handle = try await WorkerHandle.adopt(socket: pair[0], pid: pid, appID: "alpha", spawnedFor: nil, stop: {})
        let peer = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(pair[1]) { channel in
            channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel) }
        }
        return (handle, peer)
    }
}

private actor Flag {
    private(set) var value = false
    func set() { value = true }
}
