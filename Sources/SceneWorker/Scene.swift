import IPCWire

/// The scene this process hosts. Setting `title`, `userActivity` or the activation conditions
/// tells the broker at once: the broker keeps the latest and routes activations by them.
@MainActor
public final class Scene {
    public let session: SceneSessionInfo
    public internal(set) var state: SceneState = .launching

    public var title: String {
        didSet { if title != oldValue { publish(.with { $0.title = title }) } }
    }

    public var userActivity: UserActivity? {
        didSet {
            guard let userActivity, userActivity != oldValue else { return }
            publish(.with { $0.userActivity = userActivity.wire })
        }
    }

    /// Target content identifiers (shell globs) this scene wants (`prefersToActivate`) or accepts (`canActivate`).
    public var activationConditions: (canActivate: [String], prefersToActivate: [String]) = (["*"], []) {
        didSet {
            let conditions = activationConditions
            publish(.with {
                $0.activationConditions = .with {
                    $0.canActivate = conditions.canActivate
                    $0.prefersToActivate = conditions.prefersToActivate
                }
            })
        }
    }

    private let publisher: @Sendable (Windowbroker_V1_SceneUpdate) -> Void

    init(session: SceneSessionInfo, publisher: @escaping @Sendable (Windowbroker_V1_SceneUpdate) -> Void) {
        self.session = session
        self.title = session.title
        self.publisher = publisher
    }

    private func publish(_ update: Windowbroker_V1_SceneUpdate) {
        publisher(update)
    }
}
