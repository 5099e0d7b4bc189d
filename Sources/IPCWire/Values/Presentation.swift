/// How a requested scene is presented (requestSceneSessionActivation's options): `standard`
/// beside the requesting scene, `prominent` over every other scene (modal) until dismissed,
/// `automatic` as the broker decides (prominent exactly when the split is full).
public enum Presentation: String, Sendable, CaseIterable {
    case standard, automatic, prominent

    public init(wire: Windowbroker_V1_PresentationStyle) {
        switch wire {
        case .automatic: self = .automatic
        case .prominent: self = .prominent
        default: self = .standard
        }
    }

    public var wire: Windowbroker_V1_PresentationStyle {
        switch self {
        case .standard: .standard
        case .automatic: .automatic
        case .prominent: .prominent
        }
    }
}
