import Foundation
import IPCWire
import Logging
import ServiceLifecycle
import WindowBroker
import WindowBrokerTesting
import XCTest

/// The broker's services in a `ServiceGroup`, as windowbrokerd runs them, with fake scenes: a
/// graceful stop ends them in reverse order, so that the control server refuses new work and
/// answers what is in flight before any scene is asked to save, and every scene is saved
/// before the group ends.
final class ServiceGroupTests: XCTestCase {
    private var running: InProcessBroker?

    override func tearDown() async throws {
        await running?.stop()
        running = nil
    }

    func testAGracefulStopAnswersWhatIsInFlightRefusesNewWorkThenSavesEveryScene() async throws {
        let running = try await InProcessBroker.start(apps: [.init("alpha"), .init("beta")]) { $0.sessionBus = false }
        self.running = running
        let broker = running.broker
        let open: @Sendable (String) async throws -> ControlReply = { app in
            try await running.withClient { try await $0.request(.open(.with { $0.appID = app })) }
        }
        _ = try await open("beta")
        var held = await running.workers.hold(app: "alpha") { if case .connect = $0 { true } else { false } }.makeAsyncIterator()
        let inFlight = Task { try await open("alpha") }
        let connect = try await XCTUnwrapAsync(await held.next())

        let logger = Logger(label: "service-group-test")
        let group = ServiceGroup(configuration: .init(
            services: await BrokerServices.make(broker: broker, listener: .path(running.directory + "/run/group.sock"),
                                                notifier: SystemdNotifier(environment: [:]), logger: logger),
            logger: logger))
        let serving = Task { try await group.run() }
        await group.triggerGracefulShutdown()
        for _ in 0..<500 where await broker.admitsChanges { try await Task.sleep(for: .milliseconds(10)) }
        let admits = await broker.admitsChanges
        XCTAssertFalse(admits, "the stop began")

        // Draining: a new open is refused, the one in flight waits for its scene, and no
        // scene has been asked to save yet.
        do {
            _ = try await open("beta")
            XCTFail("an open during the stop was admitted")
        } catch let error as BrokerError {
            XCTAssertEqual(error.code, .requestDenied, error.message)
        }
        let beta = try await XCTUnwrapAsync(await running.workers.workers.first { $0.appID == "beta" })
        let beforeAnswer = await beta.received
        XCTAssertFalse(beforeAnswer.contains("disconnect"), "no scene stops before the requests in flight are answered: \(beforeAnswer)")

        await connect.answer()
        guard case .sessionState(let state) = try await InProcessBroker.withDeadline(.seconds(10), { try await inFlight.value }) else {
            return XCTFail("the open in flight was not answered with its session")
        }
        XCTAssertEqual(SceneState(wire: state.state), .foregroundActive)
        // Then the group saves and stops every scene, and ends without an error.
        try await InProcessBroker.withDeadline(.seconds(10)) { try await serving.value }
        for worker in await running.workers.workers {
            let received = await worker.received
            XCTAssertTrue(received.contains("saveRestorationActivity") && received.contains("disconnect"), "\(worker.appID): \(received)")
        }
        let phaseAfter = await broker.admitsChanges
        XCTAssertFalse(phaseAfter)
    }
}
