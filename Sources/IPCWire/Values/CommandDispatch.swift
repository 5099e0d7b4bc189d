/// Which link of the responder chain performed a command: the focused element (or one of its
/// ancestors), the scene, the app, or, when none of those did, the system's own action.
public enum Responder: String, Sendable {
    /// A focused element's responder (`Scene.setCommandResponder(_:forElement:)`).
    case element
    /// The scene's delegate.
    case scene
    /// The app's delegate.
    case app
    /// The system's own action for the command (New Window, Close Window, …).
    case system
}

/// What a dispatched command came to: performed, declined by the responder that took it, or
/// unhandled (no command has the key, it is disabled, or nobody performs it).
public enum CommandResult: String, Sendable {
    /// A responder performed it.
    case performed
    /// The responder that took it declined, and said why.
    case declined
    /// Nobody took it.
    case unhandled
}
