import SceneWorker

/// The app delegate around the app's own: records the app-level callbacks in the process's
/// callback log and wraps each scene delegate in a `ProbeSceneDelegate`.
@MainActor
final class ProbeAppDelegate: AppDelegate {
    private let app: any AppDelegate
    /// Every delegate callback this process received, app-level and scene-level, in order.
    var callbacks: [String] = []
    var discardedSessions: [String] = []
    /// How often this process was asked for a session's configuration (only for new sessions).
    var configurationQuestions = 0

    init(wrapping app: any AppDelegate) {
        self.app = app
    }

    func didFinishLaunching() {
        callbacks.append("didFinishLaunching")
        app.didFinishLaunching()
    }

    func configurationName(forConnecting session: SceneSessionInfo, options: ConnectionOptions) -> String? {
        configurationQuestions += 1
        return app.configurationName(forConnecting: session, options: options)
    }

    func didDiscardSceneSessions(_ sessionIDs: [SessionID]) {
        callbacks.append("didDiscardSceneSessions")
        discardedSessions += sessionIDs.map(\.description)
        app.didDiscardSceneSessions(sessionIDs)
    }

    func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate {
        ProbeSceneDelegate(wrapping: app.makeSceneDelegate(for: session), app: self)
    }

    func buildMenu(with builder: inout MenuBuilder) {
        app.buildMenu(with: &builder)
    }

    func canPerform(_ command: Command, in scene: Scene) -> Bool {
        app.canPerform(command, in: scene)
    }

    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome {
        await app.perform(command, in: scene)
    }

    func validate(_ command: inout CommandValidation, in scene: Scene) {
        app.validate(&command, in: scene)
    }
}
