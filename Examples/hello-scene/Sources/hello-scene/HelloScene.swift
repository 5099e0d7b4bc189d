// A scene app in its own package: one window per greeting list, restored after a reclaim or a
// restart, a `greet` action scripts can send (`wmctl send SESSION greet --arg name=Ada`) and,
// with a display, a GTK 4 window: the SDK makes it, the scene fills it.
import SceneWorker  // re-exports IPCWire (UserActivity, PlistValue, ...) and GTK 4's C API

@main struct Main { static func main() async { await SceneWorker.run(HelloApp()) } }

@MainActor final class HelloApp: AppDelegate {
    func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate { HelloScene() }
}

@MainActor final class HelloScene: SceneDelegate {
    var greeted: [String] = []
    /// The window's label (none headless).
    private var label: OpaquePointer?

    func willConnect(to scene: Scene, options: ConnectionOptions) {
        // What stateRestorationActivity handed over last time, when the session comes back.
        if case .list(let names)? = scene.session.restorationActivity?.userInfo["greeted"] {
            greeted = names.compactMap(\.stringValue)
        }
        scene.title = "Hello"
        if let window = scene.window {
            let label = gtk_label_new(nil)
            gtk_window_set_child(window, label)
            self.label = OpaquePointer(label)
            show()
        }
        print("hello-scene: connected, \(greeted.count) greeted so far")  // reaches `wmctl logs`
    }

    private func show() {
        guard let label else { return }
        gtk_label_set_text(label, greeted.isEmpty ? "Nobody greeted yet" : "Hello, " + greeted.joined(separator: ", "))
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
        show()
        print("hello-scene: greeted \(name)")
        return .performed(.string("hello, \(name) (\(greeted.count) greeted)"))
    }
}
