import Foundation
import IPCWire

/// A session as the broker sees it now: what is stored of it, and what is live about it (its
/// process, memory, keyboard focus, picture, crash loop). What `sessions`, `show`, D-Bus and a
/// connecting scene are told, before it is put on the wire (`Control/DomainToWire.swift`).
public struct SessionStatus: Sendable {
    public var session: SceneSession
    /// The scene's process; nil while the session is unattached.
    public var pid: Int32?
    /// Its process's proportional set size as last sampled, in bytes (0 without a process).
    public var pss: UInt64
    /// Whether it is the key scene (told didBecomeKey and not told otherwise since).
    public var isKey: Bool
    /// Whether a picture of its window is kept.
    public var hasSnapshot: Bool
    /// When its app is in a crash loop: how long until it may launch again.
    public var crashLoopRetryAfter: Duration?
}

extension Broker {
    /// The sessions, oldest first; with `app`, that app's only.
    public func sessionStatuses(app: AppID?) -> [SessionStatus] {
        allSessions
            .filter { app == nil || $0.appID == app }
            .sorted { $0.createdAt < $1.createdAt }
            .map(status)
    }

    /// One session, or the error a request about an unknown one gets.
    public func sessionStatus(_ id: SessionID) throws -> SessionStatus {
        status(try existingSession(id))
    }

    /// One session with its saved activities (`show`): read from the store when the session
    /// holds none in memory, without taking them back into it (it has no process).
    public func sessionDetail(_ id: SessionID) async throws -> SessionStatus {
        var status = try sessionStatus(id)
        if status.session.saved == nil {
            let (saved, damage) = try await store.savedActivities(of: id)
            noteDamage(damage)
            status.session.saved = saved
            drivers[id]?.session.rememberStored(saved)
        }
        return status
    }

    func status(_ session: SceneSession) -> SessionStatus {
        let driver = drivers[session.id]
        let pid = driver?.worker?.pid
        return SessionStatus(
            session: session,
            pid: pid,
            pss: pid != nil ? memory.pss[session.id] ?? 0 : 0,
            isKey: driver?.toldKey == true,
            hasSnapshot: driver?.snapshot != nil,
            crashLoopRetryAfter: processes.admission.retryAfter(session.appID, now: configuration.clock.now))
    }
}
