import Foundation
import IPCWire
@testable import WindowBroker
import WindowBrokerTesting
import XCTest

/// A graceful stop has one deadline for the whole of it (issue 67, item 5). Before: scenes were
/// asked `--reclaim-concurrency` at a time, each hung one holding up the next for its timeout,
/// so 30 hung scenes of 50 took 75 s against systemd's 60 s, and systemd would have killed the
/// later good scenes unsaved.
final class StopDeadlineTests: XCTestCase {
    private var running: InProcessBroker!

    override func tearDown() async throws {
        await running?.stop()
        running = nil
    }

    func testEveryConnectedSceneIsAskedAtOnceAndThoseNotDoneByTheDeadlineAreReported() async throws {
        let clock = ManualClock()
        running = try await InProcessBroker.start(apps: [.init("alpha")]) {
            $0.clock = clock
            $0.reclaimConcurrency = 1
            $0.maxForegroundScenes = 3
            // Only the stop's deadline ends a save here.
            $0.restorationTimeout = .seconds(600)
            $0.workerTimeout = .seconds(600)
            $0.stopTimeout = .seconds(45)
        }
        let broker = running.broker
        var sessions: [SessionID] = []
        for _ in 0..<3 {
            sessions.append(try await broker.open(ActivationRequest(appID: "alpha", sessionID: nil, activity: nil, forceNew: true)).sessionID)
        }
        let saves = await running.workers.hold(app: "alpha") { if case .restorationActivityRequest = $0 { true } else { false } }
        let asked = SavesAsked()
        let responder = Task { for await save in saves { await asked.take(save) } }
        defer { responder.cancel() }
        let stop = Task { await broker.shutdown() }
        var count = await asked.count
        for _ in 0..<400 where count < 3 {
            try await Task.sleep(for: .milliseconds(5))
            count = await asked.count
        }
        XCTAssertEqual(count, 3, "every scene asked before any answered")
        let saved = try await XCTUnwrapAsync(await asked.answerFirst())
        XCTAssertTrue(sessions.contains(saved))
        var state = try await broker.sessionStatus(saved).session.state
        for _ in 0..<400 where state != .unattached {
            try await Task.sleep(for: .milliseconds(5))
            state = try await broker.sessionStatus(saved).session.state
        }
        XCTAssertEqual(state, .unattached, "saved, told didDisconnect, gone")
        var progress = await broker.stopProgress
        for _ in 0..<400 where progress.done < 1 {
            try await Task.sleep(for: .milliseconds(5))
            progress = await broker.stopProgress
        }
        XCTAssertEqual(progress.done, 1, "one of \(progress.of) done")
        // The other two never answer: the stop ends at its deadline, not theirs.
        for _ in 0..<400 where clock.sleeperCount == 0 { try await Task.sleep(for: .milliseconds(5)) }
        clock.advance(by: .seconds(46))
        let report = try await InProcessBroker.withDeadline(.seconds(20)) { await stop.value }
        XCTAssertEqual(report.unsaved.count, 2, "\(report.unsaved)")
        XCTAssertFalse(report.unsaved.contains { $0.session == saved }, "the scene that answered was saved")
        XCTAssertTrue(report.unsaved.allSatisfy { $0.reason.contains("deadline") }, "\(report.unsaved.map(\.reason))")
    }
}

/// The saves a stop asks for: the first of each scene kept unanswered, until `answerFirst`
/// answers one scene's, and every later one of that scene (its reclaim asks again).
private actor SavesAsked {
    private var held: [FakeCommand] = []
    private var answering: SessionID?

    var count: Int { held.count }

    func take(_ save: FakeCommand) async {
        if let answering, save.worker.sessionID == answering {
            await save.answer()
        } else {
            held.append(save)
        }
    }

    func answerFirst() async -> SessionID? {
        guard let first = held.first else { return nil }
        answering = first.worker.sessionID
        await first.answer()
        return answering
    }
}

/// Issue 67 item 6: the switcher does not wait on a scene that is busy. Before: with a scene on
/// screen that did not answer, the switcher's first frame waited the whole worker timeout.
final class SwitcherWaitTests: XCTestCase {
    func testTheSwitcherDoesNotWaitForABusySceneToDrawAFreshPicture() async throws {
        let running = try await InProcessBroker.start(apps: [.init("alpha")]) {
            $0.workerTimeout = .seconds(600)
        }
        let broker = running.broker
        _ = try await broker.open(ActivationRequest(appID: "alpha", sessionID: nil, activity: nil, forceNew: true))
        do {
            var held = await running.workers.hold(app: "alpha") { if case .restorationActivityRequest = $0 { true } else { false } }.makeAsyncIterator()
            let shown = Task { try await broker.showSystemUI(.switcher(app: nil)) }
            let refresh = try await XCTUnwrapAsync(await held.next())
            // Without a display the switcher itself cannot be shown: that answer, not a wait, comes back.
            do {
                _ = try await InProcessBroker.withDeadline(.seconds(10)) { try await shown.value }
                XCTFail("shown without a display")
            } catch let error as BrokerError {
                XCTAssertTrue(error.message.contains("needs a display"), error.message)
            }
            await refresh.answer()
        }
        await running.stop()
    }
}
