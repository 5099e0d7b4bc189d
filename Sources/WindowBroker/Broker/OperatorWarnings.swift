/// What an operator must know about that its owner reported once and the broker keeps saying
/// (`wmctl status`, the systemd status line): the store's own and the skipped manifests are
/// read from their owners each time.
struct OperatorWarnings {
    /// The search index's, from its opening (a rebuilt or a missing index).
    var search: [String] = []
    /// Stored values that could not be read and were kept aside: at the start
    /// (`SessionStore.loadAll`) or when a session's activities were read back.
    var damage: [String] = []
    /// Why the D-Bus face refuses the session bus it found; nil when there is no such reason.
    var bus: String?
}
