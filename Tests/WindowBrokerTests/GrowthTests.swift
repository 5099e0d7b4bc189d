import Foundation
import IPCWire
@testable import WindowBroker
import WindowBrokerTesting
import XCTest

/// The broker's memory follows what is live, not its history: what a launch or a report leaves
/// behind once it is over (the bound on remembered discards: `RecentDiscardsTests`). In process, with fake workers; `make load` soaks
/// the same against a release broker and prints its RSS.
final class GrowthTests: XCTestCase {
    private var running: InProcessBroker!

    override func tearDown() async throws {
        await running?.stop()
        running = nil
    }

    private func start() async throws -> InProcessBroker {
        running = try await InProcessBroker.start(apps: [.init("alpha")]) { $0.workerTimeout = .seconds(5) }
        return running
    }

    /// Every earlier process's supervisor (its connection, channel, pipeline and tasks) is
    /// released once it is gone; the running one's is held by its session.
    func testARelaunchedSessionLeavesNoEarlierProcessBehind() async throws {
        let running = try await start()
        let broker = running.broker
        let id = try await openScene("alpha", on: broker).sessionID
        for _ in 0..<10 {
            _ = try await broker.background(id)
            _ = try await broker.reclaim(id)
            _ = try await broker.activate(id)
        }
        let workers = await running.workers.workers
        XCTAssertEqual(workers.count, 11)
        try await eventually("every reclaimed process's supervisor is released") {
            for worker in workers.dropLast() where !(await worker.supervisorReleased) { return false }
            return true
        }
        let current = try XCTUnwrap(workers.last)
        let currentReleased = await current.supervisorReleased
        XCTAssertFalse(currentReleased, "the running scene's supervisor is held by its session")
    }

    /// A report's commit runs in a task of its own; once it is acknowledged the session keeps
    /// nothing of it (a finished task kept is its whole stack, for as long as the session lives).
    func testACommittedReportLeavesNoTaskBehind() async throws {
        let running = try await start()
        let broker = running.broker
        let id = try await openScene("alpha", on: broker).sessionID
        let worker = try await XCTUnwrapAsync(await running.workers.workers.last)
        await worker.send(.sceneUpdate(.with { $0.title = "Reported" }), id: 77)
        try await eventually("the report is committed and its task let go of") {
            let title = try await broker.sessionStatus(id).session.title
            let committing = await broker.reportCommitting(id)
            return title == "Reported" && !committing
        }
    }
}

extension Broker {
    /// A report of the session is being committed (its task is still held).
    fileprivate func reportCommitting(_ id: SessionID) -> Bool {
        drivers[id]?.reportCommitting != nil
    }
}
