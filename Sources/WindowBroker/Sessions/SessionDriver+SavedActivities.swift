import Foundation
import IPCWire

/// A session's saved activities are in memory only while it has a process: a stored session
/// that is not running is its record and its metadata, and the store keeps its activities.
/// Both moves happen in the session's turn, so no step of it finds them gone halfway.
extension SessionDriver {
    /// The session's saved activities, read back from the store when the session let go of
    /// them. A stored value that no longer decodes is set aside and reported, as at the start.
    func savedActivities(in host: isolated some SessionHost) async throws -> SavedActivities {
        if let saved = session.saved { return saved }
        let read = savedActivitiesRead ?? readSavedActivitiesAhead(in: host)
        defer { savedActivitiesRead = nil }
        let (loaded, damage) = try await read.value
        host.noteDamage(damage)
        // Nothing else sets them in the meantime (this is the session's turn, and a session
        // without its activities has no process to report any).
        if session.saved == nil { session.saved = loaded }
        return session.saved ?? loaded
    }

    /// Starts reading the saved activities back, for a step that will need them
    /// (`savedActivities`): on a reader's queue, beside what the step does first.
    @discardableResult
    func readSavedActivitiesAhead(in host: isolated some SessionHost) -> Task<(saved: SavedActivities, damage: [String]), any Error> {
        if let read = savedActivitiesRead { return read }
        let (store, id) = (host.store, id)
        let read = Task { try await store.savedActivities(of: id) }
        savedActivitiesRead = read
        return read
    }

    /// Lets go of the saved activities once the session has no process, after its last report
    /// committed: the store has everything they held.
    func releaseSavedActivities(in host: isolated some SessionHost) async {
        await reportCommitting?.value
        guard worker == nil, earlyStart == nil else { return }
        session.releaseSaved()
        savedActivitiesRead = nil
        // What the index was last given would keep the same activity in memory; unknown, the
        // entry is written again if the session runs again.
        indexed = nil
    }
}

extension Broker {
    /// A session's process is gone: its activities leave memory in the session's turn, after
    /// whatever was decided for it before.
    func releaseSavedActivitiesLater(_ id: SessionID) {
        laterOnSession(id, orElse: ()) { [weak self] in
            await self?.releaseSavedActivities(of: id)
        }
    }

    private func releaseSavedActivities(of id: SessionID) async {
        await drivers[id]?.releaseSavedActivities(in: self)
    }
}
