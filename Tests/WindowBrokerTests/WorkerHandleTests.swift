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
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, wb_sock_stream() | wb_sock_cloexec(), 0, &pair), 0)
        let handle = try await WorkerHandle.adopt(socket: pair[0], pid: 999_999, appID: "alpha", spawnedFor: nil, stop: {})
        let peer = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(pair[1]) { channel in
            channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel) }
        }
        let worker = Task {
            try await peer.executeThenClose { inbound, outbound in
                var hello = Envelope()
                hello.id = 1
                hello.body = .hello(.current(.worker, clientName: "test", sessionID: ""))
                try await outbound.write(hello)
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

private actor Flag {
    private(set) var value = false
    func set() { value = true }
}
