import IPCWire

/// What the broker keeps per app rather than per session: the installed manifests, the menu
/// changes the app's scenes made at runtime, and the discards waiting to be told to the app's
/// next scene. One value, owned by the broker; its prewarm pool, start limit and shared
/// defaults have types of their own (`PrewarmPools`, `StartLimit`, `SceneSync`).
struct AppRegistry {
    /// Main-menu changes of one app while the broker runs, and the menu they give.
    struct RuntimeMenu {
        var operations: [MenuOperation]
        var menu: MainMenu
    }

    /// The installed apps (`Broker.reloadManifests`).
    var manifests: [AppID: AppManifest] = [:]
    /// The manifests the last (re)load skipped, with why.
    private(set) var skipped: [ManifestProblem] = []
    /// What the last (re)load loaded but warned about (an unknown key, a shadowed file).
    private(set) var warned: [ManifestProblem] = []
    var runtimeMenus: [AppID: RuntimeMenu] = [:]
    /// Discards not delivered yet, per app, oldest first.
    private var pendingDiscards: [AppID: [SessionID]] = [:]

    init(pendingDiscards: [AppID: [SessionID]] = [:]) {
        self.pendingDiscards = pendingDiscards
    }

    /// Installs what a reload read. A manifest that was good and is broken now keeps its last
    /// good version: a typo and a SIGHUP must neither uninstall an app nor hand its sessions to
    /// another manifest of the same id from a directory that ranks lower (another executable).
    /// `rank` orders manifest files by their directory (lower wins). Returns the problems,
    /// with a warning for each last good version kept.
    mutating func install(
        _ loaded: [AppID: AppManifest], problems: [ManifestProblem], rank: (String) -> Int
    ) -> [ManifestProblem] {
        var loaded = loaded
        var problems = problems
        for (id, previous) in manifests where loaded[id]?.source != previous.source {
            if let replacement = loaded[id], rank(replacement.source) < rank(previous.source) { continue }
            if problems.contains(where: { !$0.isWarning && $0.file == previous.source }) {
                loaded[id] = previous
                problems.append(ManifestProblem(file: previous.source, field: "-", reason: "the last good version of '\(id)' stays loaded until the file is fixed", isWarning: true))
            }
        }
        manifests = loaded
        skipped = problems.filter { !$0.isWarning }
        warned = problems.filter(\.isWarning)
        return problems
    }

    /// An installed app's manifest, or the error every request about an unknown app gets.
    func manifest(_ id: AppID) throws(BrokerError) -> AppManifest {
        guard let app = manifests[id] else { throw unknownApp(id) }
        return app
    }

    /// The error every request about an app that is not installed gets.
    func unknownApp(_ id: AppID) -> BrokerError {
        BrokerError(.unknownApp, "no app '\(id)' is installed (known: \(known)); `wmctl apps` lists them")
    }

    /// The installed apps' ids for a message, or "none".
    var known: String {
        manifests.isEmpty ? "none" : manifests.keys.sorted().map(\.rawValue).joined(separator: ", ")
    }

    /// The app's main menu: as its manifest built it, with its scenes' runtime changes.
    func mainMenu(_ id: AppID) throws(BrokerError) -> MainMenu {
        let manifest = try manifest(id)
        return runtimeMenus[id]?.menu ?? manifest.mainMenu
    }

    /// A discarded session the app's scenes have not been told of yet.
    mutating func addPendingDiscard(_ session: SessionID, of app: AppID) {
        pendingDiscards[app, default: []].append(session)
    }

    /// The app's pending discards, taken in one step: a second scene connecting meanwhile
    /// finds none, so no discard is told twice.
    mutating func claimPendingDiscards(of app: AppID) -> [SessionID] {
        pendingDiscards.removeValue(forKey: app) ?? []
    }

    /// Discards claimed by a connection that failed: back in front, in their order.
    mutating func returnPendingDiscards(_ sessions: [SessionID], of app: AppID) {
        guard !sessions.isEmpty else { return }
        pendingDiscards[app] = sessions + (pendingDiscards[app] ?? [])
    }
}
