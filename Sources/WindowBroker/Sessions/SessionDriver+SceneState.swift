import Foundation
import IPCWire

/// What a scene reports about itself while it runs (title, current activity, activation
/// conditions, its storage): taken into the session and committed before the scene is told
/// so, in the order the scene sent it.
extension SessionDriver {
    /// Takes a scene's title, current activity and activation conditions, and commits them
    /// before returning: the scene is told the broker took them (the acknowledgement) only once
    /// they are on disk, so a crash of the scene or of the broker never loses what was
    /// acknowledged. An activity of a type its app never declared is refused and the last one
    /// stays; a write that fails is refused and what was committed before stays.
    func apply(_ update: Windowbroker_V1_SceneUpdate, in host: isolated some SessionHost) async throws {
        guard let change = try stage(update, in: host) else { return }
        try await commit(change, in: host)
    }

    /// `apply`'s first half: the report checked and taken into the session in memory (served at
    /// once); nil when it changes nothing. Its commit is still to come (`commit`).
    func stage(_ update: Windowbroker_V1_SceneUpdate, in host: isolated some SessionHost) throws -> StagedChange? {
        var activity: UserActivity?
        if update.hasUserActivity {
            let reported = try UserActivity(wire: update.userActivity, maxBytes: host.configuration.maxActivityBytes)
            if let app = host.manifest(appID), !app.declares(activityType: reported.activityType) {
                throw BrokerError(.undeclaredActivityType, "app '\(app.id)' does not declare activity type '\(reported.activityType)'; the scene's last activity is kept")
            }
            if reported != session.saved?.currentActivity || session.saved?.currentSavedAt == nil { activity = reported }
        }
        var changed = session
        if let activity { changed.saved?.currentActivity = activity }
        if !update.title.isEmpty { changed.title = String(update.title.prefix(256)) }
        if update.hasActivationConditions {
            changed.activationConditions = ActivationConditions(wire: update.activationConditions)
        }
        return stage(changed, activity: activity)
    }

    /// The scene's storage writes, checked and taken into the session in memory, refused as a
    /// whole when a key or the total is too large; nil when they change nothing. Their commit
    /// is still to come (`commit`): the acknowledgement the scene waits for means "on disk".
    func stageStorage(_ update: Windowbroker_V1_SceneStorageUpdate, in host: isolated some SessionHost) throws -> StagedChange? {
        var storage = session.storage
        for key in update.removed { storage[key] = nil }
        for entry in update.set.entries {
            try SyncLimits.checkKey(entry.key, what: "the storage key")
            storage[entry.key] = try PlistValue(wire: entry.value, path: "storage.\(entry.key)")
        }
        try SyncLimits.checkSize(storage, maxBytes: host.configuration.maxSceneStorageBytes, what: "the scene's storage")
        var changed = session
        changed.storage = storage
        return stage(changed)
    }

    /// A scene's change, applied to its session in memory and not yet committed.
    struct StagedChange {
        let before: SceneSession
        let changed: SceneSession
        let activity: UserActivity?
        let at: Date
    }

    /// `changed` becomes the session (it was derived from it in the same step); nil when it
    /// changes nothing. A new activity is committed even when the session does not hold its
    /// activities in memory (a running scene always does; the store is what counts).
    private func stage(_ changed: SceneSession, activity: UserActivity? = nil) -> StagedChange? {
        guard changed != session || activity != nil else { return nil }
        let before = session
        session = changed
        return StagedChange(before: before, changed: changed, activity: activity, at: Date())
    }

    /// Commits a staged change in the store's next group commit (changes staged later commit in
    /// a later or the same one). On failure the fields the change touched go back to what is
    /// on disk, and the error says why.
    func commit(_ change: StagedChange, in host: isolated some SessionHost) async throws {
        do {
            try await host.store.commitSceneState(change.changed, attached: worker != nil, current: change.activity, at: change.at)
        } catch {
            // Only what this change wrote goes back: a later change may have landed meanwhile.
            if let activity = change.activity, session.saved?.currentActivity == activity {
                session.saved?.currentActivity = change.before.saved?.currentActivity
            }
            if session.storage == change.changed.storage { session.storage = change.before.storage }
            throw SessionStore.brokerError(error, doing: "save the scene's change", path: host.store.path)
        }
        if let activity = change.activity, session.saved?.currentActivity == activity { session.saved?.currentSavedAt = change.at }
    }

    /// The session's latest activity, what a search finds: the current one while the scene
    /// runs, else the one it handed over for restoration. Derived data, rebuilt from the store
    /// when lost: a scene's report is acknowledged once committed, and indexed after that. The
    /// write is queued, not awaited: nothing the scene or the lifecycle does next waits for the
    /// index (writing it took longer than the commit), and the index's one writer keeps the
    /// entries in the order they were queued.
    func reindex(in host: isolated some SessionHost) {
        // Without its activities in memory the session has not changed since they left.
        guard let searchIndex = host.searchIndex, let saved = session.saved else { return }
        let activity = saved.searchable
        if let previous = indexed, previous.value == activity { return }
        indexed = Boxed(activity)
        let id = self.id
        searchIndex.index(activity, session: id, app: appID) { [weak host] error in
            Task { await host?.indexWriteFailed(id, activity: activity, error) }
        }
    }
}

extension Broker {
    /// An index write that did not land: logged, and the session's entry is written again at
    /// its next change (its driver no longer takes the entry for written).
    func indexWriteFailed(_ id: SessionID, activity: UserActivity?, _ error: any Error) {
        logger.warning("cannot update the search index", metadata: ["session": "\(id)", "error": "\(error)"])
        if let driver = drivers[id], let indexed = driver.indexed, indexed.value == activity { driver.indexed = nil }
    }
}
