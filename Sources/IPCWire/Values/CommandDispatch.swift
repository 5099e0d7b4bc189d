/// Which link of the responder chain performed a command: the focused element (or one of its
/// ancestors), the scene, the app, or, when none of those did, the system's own action.
public enum Responder: String, Sendable, CaseIterable, Codable {
    case element
    case scene
    case app
    case system
}

/// What a dispatched command came to: performed, declined by the responder that took it, or
/// unhandled (no command has the key, it is disabled, or nobody performs it).
public enum CommandResult: String, Sendable, CaseIterable, Codable {
    case performed
    case declined
    case unhandled
}
