import SceneWorker  // re-exports IPCWire: SessionID, UserActivity, PlistValue, BrokerError, UpdateEvent

@main struct Main { static func main() async { await SceneWorker.run(MyApp()) } }

@MainActor final class MyApp: AppDelegate {
    func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate { MyScene() }
    func didDiscardSceneSessions(_ ids: [SessionID]) { /* delete drafts of those sessions */ }
}

@MainActor final class MyScene: SceneDelegate {
    var count = 0

    func willConnect(to scene: Scene, options: ConnectionOptions) {
        // Back after reclaim, a crash or a reboot: what stateRestorationActivity handed over.
        count = Int(scene.session.restorationActivity?.userInfo["count"]?.integerValue ?? 0)
        // A restored scene keeps the title its session has; a new one gets the app's.
        if scene.session.restorationActivity == nil { scene.title = "Counter" }
    }

    func stateRestorationActivity(for scene: Scene) -> UserActivity? {
        UserActivity(activityType: "minimal.counter", title: scene.title, userInfo: ["count": .integer(Int64(count))])
    }

    func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome {
        switch action.name {
        case "increment":
            count += 1
            // Every scene of the app hears it (the one-way data flow), this one included.
            _ = try? await scene.post(UpdateEvent(name: "counted", payload: ["count": .integer(Int64(count))]))
            return .performed(.integer(Int64(count)))
        case "open-another":
            // A scene opens a scene of its own app (requestSceneSessionActivation).
            let outcome = try? await scene.requestActivation(options: .init(presentation: .standard, alwaysNew: true))
            return .performed(outcome.map { .string($0.session.description) })
        default:
            return .declined("unknown action \(action.name)")
        }
    }

    func didReceive(_ scene: Scene, update: UpdateEvent) {
        if update.name == "counted", let value = update.payload["count"]?.integerValue { count = Int(value) }
    }

    // A keyboard command (declared in the manifest or with scene.changeMenu): this scene performs it.
    func canPerform(_ command: Command, in scene: Scene) -> Bool { command.id == "minimal.reset" }

    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome {
        count = 0
        return .performed(.integer(0))
    }
}
