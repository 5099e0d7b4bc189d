/// An app's identity: the `id` of its manifest (`notes`), the same in sessions, the store,
/// the wire, logs and `wmctl`. A name in code, so that an app id and a session id, a title or
/// an activity type cannot be swapped for one another; its text is exactly what the manifest says.
public struct AppID: Hashable, Sendable, Comparable, CustomStringConvertible, LosslessStringConvertible, ExpressibleByStringLiteral {
    /// The manifest's `id`.
    public let rawValue: String

    /// The app this text names (an app id is any text; the manifest loader checks its form).
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// The app a literal names (`"notes"`).
    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The manifest's `id`, as written.
    public var description: String { rawValue }

    /// In the order of their text: how app lists are sorted.
    public static func < (lhs: AppID, rhs: AppID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
