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
    func apply(_ update: Windowbroker_V1_SceneUpdate, in broker: isolated Broker) async throws {
        var activity: UserActivity?
        if update.hasUserActivity {
            let reported = try UserActivity(wire: update.userActivity, maxBytes: broker.configuration.maxActivityBytes)
            if let app = broker.apps.manifests[appID], !app.declares(activityType: reported.activityType) {
                throw BrokerError(.undeclaredActivityType, "app '\(app.id)' does not declare activity type '\(reported.activityType)'; the scene's last activity is kept")
            }
            if reported != session.currentActivity || session.currentSavedAt == nil { activity = reported }
        }
        var changed = session
        if let activity { changed.currentActivity = activity }
        if !update.title.isEmpty { changed.title = String(update.title.prefix(256)) }
        if update.hasActivationConditions {
            changed.activationConditions = ActivationConditions(wire: update.activationConditions)
        }
        guard changed != session else { return }
        try await commit(changing: { current in
            if let activity { current.currentActivity = activity }
            current.title = changed.title
            current.activationConditions = changed.activationConditions
        }, activity: activity, in: broker)
    }

    /// Takes a scene's storage writes, refused as a whole when a key or the total is too large;
    /// returns once they are committed (the acknowledgement the scene waits for means "on disk").
    func applyStorage(_ update: Windowbroker_V1_SceneStorageUpdate, in broker: isolated Broker) async throws {
        var storage = session.storage
        for key in update.removed { storage[key] = nil }
        for (key, value) in update.set.entries {
            try SyncLimits.checkKey(key, what: "the storage key")
            storage[key] = try PlistValue(wire: value, path: "storage.\(key)")
        }
        try SyncLimits.checkSize(storage, maxBytes: broker.configuration.maxSceneStorageBytes, what: "the scene's storage")
        guard storage != session.storage else { return }
        try await commit(changing: { $0.storage = storage }, in: broker)
    }

    /// Applies a scene's change to its session in memory (served at once) and commits it in the
    /// store's next group commit. On failure the fields the change touched go back to what is
    /// on disk, and the error says why.
    private func commit(changing change: (inout SceneSession) -> Void, activity: UserActivity? = nil, in broker: isolated Broker) async throws {
        let before = session
        change(&session)
        let changed = session
        let now = Date()
        do {
            try await broker.store.commitSceneState(changed, attached: worker != nil, current: activity, at: now)
        } catch {
            // Only what this change wrote goes back: a later change may have landed meanwhile.
            if let activity, session.currentActivity == activity { session.currentActivity = before.currentActivity }
            if session.storage == changed.storage { session.storage = before.storage }
            throw SessionStore.brokerError(error, doing: "save the scene's change", path: broker.store.path)
        }
        if let activity, session.currentActivity == activity { session.currentSavedAt = now }
    }

    /// The session's latest activity, what a search finds: the current one while the scene
    /// runs, else the one it handed over for restoration. Derived data, rebuilt from the store
    /// when lost: a scene's report is acknowledged once committed, and indexed after that.
    func reindex(in broker: isolated Broker) async {
        guard let searchIndex = broker.searchIndex else { return }
        let activity = session.currentActivity ?? session.restoration
        if let previous = indexed, previous == activity { return }
        do {
            try await searchIndex.index(activity, session: id, app: appID)
            indexed = activity
        } catch {
            broker.logger.warning("cannot update the search index", metadata: ["session": "\(id)", "error": "\(error)"])
        }
    }
}
