// A scene app in its own package: one window per greeting, restored after a reclaim or a
// restart, and a `greet` action scripts can send (`wmctl send SESSION greet --arg name=Ada`).
import SceneWorker

@main struct Main { static func main() async { await SceneWorker.run(HelloApp()) } }

@MainActor final class HelloApp: AppDelegate {
    func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate { HelloScene() }
}

@MainActor final class HelloScene: SceneDelegate {
    var greeted: [String] = []

    func willConnect(to scene: Scene, options: ConnectionOptions) {
        // What stateRestorationActivity handed over last time, when the session comes back.
        if case .list(let names)? = scene.session.restorationActivity?.userInfo["greeted"] {
            greeted = names.compactMap(\.stringValue)
        }
        scene.title = "Hello"
        print("hello-scene: connected, \(greeted.count) greeted so far")  // reaches `wmctl logs`
    }

    func stateRestorationActivity(for scene: Scene) -> UserActivity? {
        UserActivity(activityType: "hello.greeting", title: scene.title,
                     userInfo: ["greeted": .list(greeted.map { .string($0) })])
    }

    func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome {
        guard action.name == "greet" else { return .declined("hello-scene knows only 'greet'") }
        let name = action["name"]?.stringValue ?? "world"
        greeted.append(name)
        scene.title = "Hello, \(name)"
        print("hello-scene: greeted \(name)")
        return .performed(.string("hello, \(name) (\(greeted.count) greeted)"))
    }

    func draw(_ scene: Scene, in context: DrawingContext) {
        context.text(greeted.isEmpty ? "Nobody greeted yet" : "Hello, " + greeted.joined(separator: ", "))
    }
}
