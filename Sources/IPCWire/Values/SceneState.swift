/// Where a scene session is in its lifecycle. The raw values are the names wmctl prints.
public enum SceneState: String, Sendable, Codable, CaseIterable {
    /// The session exists (it is in the switcher) but no process is attached.
    case unattached
    /// A worker is being spawned and connected.
    case launching
    /// Visible, without the focus.
    case foregroundInactive
    /// Visible, with the focus: at most one scene at a time.
    case foregroundActive
    /// Not visible; the process runs and may be reclaimed.
    case background

    /// Visible: active or inactive.
    public var isForeground: Bool { self == .foregroundActive || self == .foregroundInactive }
    /// A process is attached and connected.
    public var isConnected: Bool { self != .unattached && self != .launching }
}

extension SceneState {
    /// The state the wire names.
    package init(wire: Windowbroker_V1_SceneState) {
        switch wire {
        case .launching: self = .launching
        case .foregroundInactive: self = .foregroundInactive
        case .foregroundActive: self = .foregroundActive
        case .background: self = .background
        case .unattached, .unspecified, .UNRECOGNIZED: self = .unattached
        }
    }

    /// The state as the wire names it.
    package var wire: Windowbroker_V1_SceneState {
        switch self {
        case .unattached: .unattached
        case .launching: .launching
        case .foregroundInactive: .foregroundInactive
        case .foregroundActive: .foregroundActive
        case .background: .background
        }
    }
}
