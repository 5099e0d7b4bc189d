/// UIKit's dismissal animations for a scene that asks for a session's destruction
/// (`requestSceneSessionDestruction`); the broker records which one in its events.
public enum Dismissal: String, Sendable {
    /// The default animation, a confirming one (the user finished), or a cancelling one.
    case standard, commit, decline

    /// The animation the wire names.
    package init(wire: Windowbroker_V1_Dismissal) {
        switch wire {
        case .commit: self = .commit
        case .decline: self = .decline
        default: self = .standard
        }
    }

    /// The animation as the wire names it.
    package var wire: Windowbroker_V1_Dismissal {
        switch self {
        case .standard: .standard
        case .commit: .commit
        case .decline: .decline
        }
    }
}
