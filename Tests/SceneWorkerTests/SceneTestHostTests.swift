import SceneWorker
import SceneWorkerTesting
import XCTest

/// A scene delegate tested with the SDK's test kit: the SDK's real runtime on a socket pair,
/// no broker, no process.
@MainActor
final class SceneTestHostTests: XCTestCase {
    /// An app small enough to read in the test: it records every callback it gets and keeps
    /// one line of text.
    final class CounterApp: AppDelegate {
        var calls: [String] = []
        func didFinishLaunching() { calls.append("didFinishLaunching") }
        func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate {
            calls.append("makeSceneDelegate")
            return CounterScene(app: self)
        }
    }

    final class CounterScene: SceneDelegate {
        let app: CounterApp
        var count = 0
        init(app: CounterApp) { self.app = app }

        func willConnect(to scene: Scene, options: ConnectionOptions) {
            app.calls.append("willConnect")
            let from = options.userActivities.first ?? scene.session.restorationActivity
            count = Int(from?.userInfo["count"]?.integerValue ?? 0)
            publish(scene)
        }
        func restoreInteractionState(_ scene: Scene, with activity: UserActivity, restoration: RestorationRequest) {
            app.calls.append("restoreInteractionState")
        }
        func willEnterForeground(_ scene: Scene) { app.calls.append("willEnterForeground") }
        func didBecomeActive(_ scene: Scene) { app.calls.append("didBecomeActive") }
        func willResignActive(_ scene: Scene) { app.calls.append("willResignActive") }
        func didEnterBackground(_ scene: Scene) { app.calls.append("didEnterBackground") }
        func didDisconnect(_ scene: Scene) { app.calls.append("didDisconnect") }

        func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome {
            guard action.name == "add" else { return .declined("unknown action \(action.name)") }
            count += Int(action["by"]?.integerValue ?? 1)
            scene.storage["last"] = .integer(Int64(count))
            publish(scene)
            return .performed(.integer(Int64(count)))
        }

        private func publish(_ scene: Scene) {
            scene.title = "Count \(count)"
            scene.userActivity = UserActivity(activityType: "counter.show", userInfo: ["count": .integer(Int64(count))])
        }
    }

    func testTheLifecycleArrivesInTheContractsOrderAndTheSceneReportsItsState() async throws {
        let app = CounterApp()
        let host = try await SceneTestHost.start(app, appID: "counter")
        try await host.connect(activity: UserActivity(activityType: "counter.show", userInfo: ["count": .integer(40)]))
        try await host.enterForeground()
        let outcome = try await host.perform("add", ["by": .integer(2)])
        XCTAssertEqual(outcome, .performed(.integer(42)))
        // The answer came after the reports before it were acknowledged: they are here now.
        XCTAssertEqual(host.title, "Count 42")
        XCTAssertEqual(host.currentActivity?.userInfo["count"], .integer(42))
        XCTAssertEqual(host.storage["last"], .integer(42))

        try await host.enterBackground()
        let saved = try await host.saveRestorationActivity()
        XCTAssertEqual(saved?.userInfo["count"], .integer(42), "the default save is the current activity")
        try await host.disconnect()
        // The app launches with the process, before any scene; then the scene's life in order.
        XCTAssertEqual(app.calls, [
            "didFinishLaunching", "makeSceneDelegate", "willConnect", "willEnterForeground", "didBecomeActive",
            "willResignActive", "didEnterBackground", "didDisconnect",
        ])
    }

    func testWhatOneCallbackChangesGoesToTheBrokerInOneReport() async throws {
        let host = try await SceneTestHost.start(CounterApp(), appID: "counter")
        // willConnect sets the title, then the activity: one report carries both.
        try await host.connect(activity: UserActivity(activityType: "counter.show", userInfo: ["count": .integer(1)]))
        XCTAssertEqual(host.sceneUpdatesReceived, 1)
        XCTAssertEqual(host.title, "Count 1")
        XCTAssertEqual(host.currentActivity?.userInfo["count"], .integer(1))
        try await host.enterForeground()
        for by in 1...3 { _ = try await host.perform("add", ["by": .integer(Int64(by))]) }
        XCTAssertEqual(host.sceneUpdatesReceived, 4, "one report per action")
        XCTAssertEqual(host.title, "Count 7")
        XCTAssertEqual(host.storage["last"], .integer(7))
        try await host.disconnect()
    }

    func testARestoredSessionConnectsFromItsSavedActivityAndIsToldToRestore() async throws {
        let app = CounterApp()
        let host = try await SceneTestHost.start(app, appID: "counter")
        try await host.connect(restoring: UserActivity(activityType: "counter.show", userInfo: ["count": .integer(7)]))
        XCTAssertEqual(host.title, "Count 7")
        XCTAssertEqual(Array(app.calls.suffix(2)), ["willConnect", "restoreInteractionState"])
        let unknown = try await host.perform("subtract")
        XCTAssertEqual(unknown, .declined("unknown action subtract"))
        try await host.disconnect()
    }
}
