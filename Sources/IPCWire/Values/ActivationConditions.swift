/// Which activations a scene takes (`UIScene.activationConditions`): the target content
/// identifiers it accepts (`canActivate`) and those it wants (`prefersToActivate`), as shell
/// globs. The broker routes an activation to the scene whose conditions match its target.
public struct ActivationConditions: Sendable, Hashable, Codable {
    /// Targets the scene accepts; `["*"]`: any.
    public var canActivate: [String]
    /// Targets the scene wants before any other scene of its app.
    public var prefersToActivate: [String]

    /// Conditions with these patterns.
    public init(canActivate: [String] = ["*"], prefersToActivate: [String] = []) {
        self.canActivate = canActivate
        self.prefersToActivate = prefersToActivate
    }

    /// A scene that accepts any target and prefers none (a scene's conditions until it says otherwise).
    public static let `default` = ActivationConditions()

    package var wire: Windowbroker_V1_ActivationConditions {
        .with {
            $0.canActivate = canActivate
            $0.prefersToActivate = prefersToActivate
        }
    }

    package init(wire: Windowbroker_V1_ActivationConditions) {
        self.init(canActivate: wire.canActivate, prefersToActivate: wire.prefersToActivate)
    }
}
