/// How a requested scene is presented (requestSceneSessionActivation's options): `standard`
/// beside the requesting scene, `prominent` over every other scene (modal) until dismissed,
/// `automatic` as the broker decides (prominent exactly when the split is full).
public enum Presentation: String, Sendable, CaseIterable {
    /// Beside the requesting scene; the broker's choice; over every other scene.
    case standard, automatic, prominent

    /// The style the wire names.
    package init(wire: Windowbroker_V1_PresentationStyle) {
        switch wire {
        case .automatic: self = .automatic
        case .prominent: self = .prominent
        default: self = .standard
        }
    }

    /// The style as the wire names it.
    package var wire: Windowbroker_V1_PresentationStyle {
        switch self {
        case .standard: .standard
        case .automatic: .automatic
        case .prominent: .prominent
        }
    }
}
