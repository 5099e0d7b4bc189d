/// WindowBroker: the broker core.
///
/// `Broker` is the façade: control connections (`Control/`) and worker supervisors
/// (`Workers/`) decode frames and call into it, and it hands each piece of work to the one
/// owner of the state it touches. A session is owned by its `SessionDriver` (its state, its
/// process, its mailbox, its scene's frames), which moves it only through the pure lifecycle
/// reducer (`Sessions/SessionLifecycle`) and persists through `Sessions/SessionStore`. What is
/// not one session's has an owner of its own: `AppRegistry` (manifests, runtime menus,
/// pending discards), `SceneProcesses` (the live processes and whom they show, launch
/// admission, the prewarm pools), `SceneSync` (updates and shared defaults),
/// `PressureResponder` (the memory level and its response), `BrokerPhase` (running,
/// draining, stopped), the `EventHub` (subscribers and the events' log lines). Only focus is decided across sessions
/// (`Activation/FocusCoordinator`, pure), so a scene that hangs costs only its own session.
import CLinuxShim
import Foundation
import IPCWire
import Logging
import NIOCore
import NIOPosix

/// The counts `wmctl status` shows beside the pressure and the warnings.
public struct BrokerStatus: Sendable {
    public var uptime: TimeInterval
    public var sessions: Int
    public var workers: Int
    public var updatesPosted: UInt64
    public var updatesDropped: UInt64
}

public actor Broker {
    public let configuration: BrokerConfiguration
    public let memoryConfiguration: MemoryConfiguration
    let store: SessionStore
    /// Pictures of the sessions' windows (`Sessions/SnapshotStore`), and what is known of each.
    let snapshots: SnapshotStore
    /// What the scene processes print, per session (`wmctl logs`).
    public let workerOutput: WorkerOutput
    /// Searchable activities; nil when the index cannot be opened at all (search is then refused).
    let searchIndex: SearchIndex?
    /// What an operator must know about, as each owner reported it (`status`, `warnings`).
    private var warningsSeen = OperatorWarnings()
    let launcher: any WorkerLauncher
    /// The switcher and the command overlay (a process of their own on the compositor).
    let systemUI: SystemUIHost
    let logger: Logger

    /// Per app: manifests, runtime menus, pending discards (`AppRegistry`).
    var apps = AppRegistry()
    /// One driver per session (`Sessions/SessionDriver`): the session, its process, its mailbox.
    var drivers: [SessionID: SessionDriver] = [:]
    var focus: FocusCoordinator
    /// The workspace as last recorded in the store, the next one to write, and whether a write is under way.
    var workspace: (recorded: SessionStore.Workspace?, pending: SessionStore.Workspace?, writing: Bool) = (nil, nil, false)
    /// The compositor as it reported itself: where the keyboard is, the scenes it took away.
    var compositor: Compositor
    /// Sessions discarded lately, so a late request gets "discarded" rather than "unknown".
    var discarded = RecentDiscards()
    var events: EventHub
    /// The memory level and the response to it (`Memory/PressureResponder.swift`).
    let memory: PressureResponder
    /// The live processes and the session each shows, launch admission, the prewarm pools.
    var processes: SceneProcesses
    /// Update events, shared defaults and the scenes' update queues (`Sync/`).
    let sync = SceneSync()
    /// Where the broker is in its own life (running, draining, stopped) and the requests in flight.
    let phase = BrokerPhase()
    /// The event loop that serves the control socket, so the one where a client's open is read
    /// and handled. Prewarmed workers wait on it too (`WorkerSpawner.prewarmLoop`): the open
    /// that binds one writes its connect command at once, on the thread that decided it,
    /// instead of waking the other loop's thread for it.
    nonisolated let requestLoop: any EventLoop

    /// `launcher` starts workers; nil means real processes (`WorkerSpawner`).
    public init(
        configuration: BrokerConfiguration, memory: MemoryConfiguration = MemoryConfiguration(), logger: Logger,
        launcher: (any WorkerLauncher)? = nil
    ) async throws {
        self.configuration = configuration
        self.memoryConfiguration = memory
        self.memory = PressureResponder(configuration: memory)
        self.logger = logger
        self.events = EventHub(log: EventLogLines(logger: logger))
        self.compositor = Compositor(environment: configuration.environment)
        self.focus = FocusCoordinator(maxForeground: configuration.maxForegroundScenes)
        self.processes = SceneProcesses(admission: LaunchAdmission(
            startLimit: StartLimit(burst: configuration.startLimitBurst, interval: configuration.startLimitInterval),
            maxLiveWorkers: configuration.maxLiveWorkers))
        self.store = try SessionStore(directory: configuration.stateDirectory, logger: logger)
        // The directory as the store resolved it: pictures go where the store is, always.
        self.snapshots = SnapshotStore(stateDirectory: store.directory)
        self.workerOutput = WorkerOutput(logger: logger)
        let workerEnvironment = configuration.environment
        let requestLoop = MultiThreadedEventLoopGroup.singleton.next()
        self.requestLoop = requestLoop
        self.launcher = launcher ?? WorkerSpawner(environment: workerEnvironment, prewarmLoop: requestLoop, output: workerOutput, logger: logger)
        // Scenes draw with GTK; the system UI with the drawing library beside the broker.
        var uiEnvironment = workerEnvironment
        uiEnvironment["WINDOWBROKER_SOCKET"] = configuration.socketPath
        if let drawing = configuration.drawingLibrary {
            logger.info("drawing library (the system UI's)", metadata: ["path": "\(drawing)"])
            uiEnvironment["WINDOWBROKER_DRAWING_LIBRARY"] = drawing
        } else if launcher == nil {
            logger.warning("no drawing library: libwindowbroker-drawing.so is neither beside windowbrokerd nor in ../libexec/windowbroker; the system UI finds it beside its own program or not at all (give WINDOWBROKER_DRAWING_LIBRARY)")
        }
        let uiExecutable = configuration.systemUIExecutable
        self.systemUI = SystemUIHost(executable: uiExecutable, environment: uiEnvironment)
        if let executable = uiExecutable {
            logger.info("system UI (switcher, command overlay)", metadata: ["path": "\(executable)"])
        } else {
            logger.warning("no system UI: windowbroker-ui is neither beside windowbrokerd nor in ../libexec/windowbroker; the switcher and the command overlay cannot be shown (give --system-ui)")
        }
        let loaded = try await store.loadAll()
        for session in loaded.sessions {
            drivers[session.id] = SessionDriver(session)
        }
        for (id, info) in snapshots.reconcile(with: Set(drivers.keys)) { drivers[id]?.snapshot = info }
        apps = AppRegistry(pendingDiscards: try await store.pendingDiscards())
        let store = self.store
        (searchIndex, warningsSeen.search) = await SearchIndex.open(
            directory: store.directory, rebuild: configuration.rebuildSearchIndex, sessions: loaded.sessions, entries: { try await store.searchEntries() }, logger: logger)
        noteDamage(loaded.damage)
        do {
            sync.defaults = try await store.loadDefaults()
        } catch {
            logger.error("cannot read the apps' shared defaults; starting without them", metadata: ["error": "\(error)"])
        }
        for warning in store.warnings {
            logger.error("session store recovered", metadata: ["warning": "\(warning)"])
        }
        await reloadManifests()
        logger.info("broker state loaded", metadata: ["sessions": "\(drivers.count)", "apps": "\(apps.manifests.count)", "store": "\(store.path)"])
        // The start read every stored session and built the search index: the caches and heap
        // pages only that needed go back to the system (measured: 7.6 of 36.5 MiB, 10,000 sessions).
        store.releaseMemory()
        searchIndex?.releaseMemory()
        _ = wb_trim_heap()
        // With a display, the switcher's process is started ahead of the first request.
        Task { [systemUI] in await systemUI.prepareSpareSoon() }
    }

    /// Re-reads the app manifests; bad ones are logged with file, field and reason, and skipped.
    @discardableResult
    public func reloadManifests() async -> [ManifestProblem] {
        let loader = ManifestLoader(
            directories: configuration.appsDirectories,
            helperDirectory: configuration.helperDirectory,
            searchPath: (configuration.environment["PATH"] ?? "").split(separator: ":").map(String.init))
        // Read off the event loops; a thread pool that is gone (process exit) reads here.
        let (loaded, found) = (try? await OffLoop.run { loader.load() }) ?? loader.load()
        let before = apps.manifests
        let problems = apps.install(loaded, problems: found) { file in
            loader.directories.firstIndex { file.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") } ?? Int.max
        }
        // Idle processes started from a manifest that changed (its executable, its arguments)
        // are not bound to anyone: the pool refills from the new one, the zygote starts again.
        for (id, old) in before.sorted(by: { $0.key < $1.key }) where apps.manifests[id] != old {
            await processes.pools.drain(id, reason: .appChanged, in: self)
        }
        for problem in problems {
            if problem.isWarning {
                logger.warning("app manifest", metadata: ["problem": "\(problem)"])
            } else {
                logger.error("skipping app manifest", metadata: ["problem": "\(problem)"])
            }
        }
        for app in apps.manifests.values.sorted(by: { $0.id < $1.id }) {
            for error in app.commandErrors {
                logger.warning("app menu: element not inserted", metadata: ["app": "\(app.id)", "problem": "\(error)"])
            }
        }
        if apps.manifests.isEmpty {
            let searched = loader.directories.joined(separator: ", ")
            logger.warning("no apps are installed: no manifest was found in \(searched.isEmpty ? "no directory" : searched); give one with --apps-dir")
        }
        reapplyRuntimeMenus()
        processes.pools.refill(in: self)
        // The zygotes start now, not at their app's first open, which would otherwise wait for
        // one to load (and, with a display, to read the fonts) before its fork.
        let zygoteApps = apps.manifests.values.filter(\.zygote).sorted { $0.id < $1.id }
        if !zygoteApps.isEmpty, phase.isRunning {
            Task { [launcher] in
                for app in zygoteApps { await launcher.prepare(app: app) }
            }
        }
        return problems
    }

    /// Runs `body` for every id at once and returns the results that came within `limit` on
    /// `clock`; the others go on, unawaited. `progress` hears how many are in after each.
    func allAtOnce<T: Sendable>(
        _ ids: [SessionID], within limit: Duration, on clock: any BrokerClock,
        _ body: @escaping @Sendable (SessionID) async -> T, progress: (Int) -> Void = { _ in }
    ) async -> [SessionID: T] {
        guard !ids.isEmpty else { return [:] }
        let (results, sink) = AsyncStream<(SessionID, T)?>.makeStream()
        for id in ids { Task { sink.yield((id, await body(id))) } }
        let timer = Task {
            if limit > .zero { try await clock.sleep(for: limit) }
            sink.yield(nil)
        }
        defer { timer.cancel() }
        var done: [SessionID: T] = [:]
        for await result in results {
            guard let (id, value) = result else { break }
            done[id] = value
            progress(done.count)
            if done.count == ids.count { break }
        }
        return done
    }

    /// Runs `body` for each id, at most `limit` at a time; results keyed by id.
    func concurrently<T: Sendable>(_ ids: [SessionID], limit: Int, _ body: @escaping @Sendable (SessionID) async -> T) async -> [SessionID: T] {
        await withTaskGroup(of: (SessionID, T).self) { group in
            var results: [SessionID: T] = [:]
            var pending = ids[...]
            for _ in 0..<max(1, limit) {
                guard let id = pending.popFirst() else { break }
                group.addTask { (id, await body(id)) }
            }
            while let (id, result) = await group.next() {
                results[id] = result
                if let next = pending.popFirst() { group.addTask { (next, await body(next)) } }
            }
            return results
        }
    }

    // MARK: - Queries

    public func status() -> BrokerStatus {
        BrokerStatus(uptime: Date().timeIntervalSince(phase.startedAt), sessions: drivers.count, workers: processes.live,
                     updatesPosted: sync.postedCount, updatesDropped: sync.droppedNotices)
    }

    /// "Ready: 3 sessions, 1 worker".
    public var statusLine: String {
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        let line = "Ready: \(count(drivers.count, "session")), \(count(processes.live, "worker")), pressure \(memory.level)"
        let warnings = store.warnings + warningsSeen.damage
        return warnings.isEmpty ? line : line + "; WARNING: \(warnings.joined(separator: "; "))"
    }

    /// Damaged stored values the store set aside, found at the start or when a session's
    /// activities were read back: logged, and reported by `status` from then on.
    func noteDamage(_ damage: [String]) {
        for warning in damage {
            logger.warning("session store: damaged value kept aside", metadata: ["warning": "\(warning)"])
        }
        warningsSeen.damage += damage
    }

    /// What an operator must know about (a damaged store moved aside at start, damaged values
    /// kept aside, manifests skipped, no app at all, ...).
    public var warnings: [String] {
        var manifests: [String] = []
        if apps.manifests.isEmpty {
            manifests.append("no apps are installed (no manifest in \(configuration.appsDirectories.joined(separator: ", "))); start the broker with --apps-dir DIR")
        }
        if !brokenManifests.isEmpty {
            manifests.append("\(brokenManifests.count) app manifest\(brokenManifests.count == 1 ? " was" : "s were") skipped; `wmctl apps` says why")
        }
        manifests += apps.warned.map { "app manifest \($0)" }
        return store.warnings + warningsSeen.damage + warningsSeen.search + manifests + (warningsSeen.bus.map { ["no D-Bus face: \($0)"] } ?? [])
    }

    /// Why the D-Bus face refuses the session bus it found (nil: no such reason now).
    func noteBusProblem(_ problem: String?) {
        warningsSeen.bus = problem
    }

    /// Manifests skipped at the last (re)load, with why.
    public var brokenManifests: [ManifestProblem] { apps.skipped }

    /// What the last (re)load skipped, and what it loaded with a warning.
    var manifestProblems: (skipped: [ManifestProblem], warned: [ManifestProblem]) { (apps.skipped, apps.warned) }

    /// An app filter names an app: installed, or one that still has sessions (its manifest
    /// went away). Anything else is a typo that would silently match nothing.
    func checkKnownApp(_ id: AppID) throws(BrokerError) {
        guard apps.manifests[id] == nil, !allSessions.contains(where: { $0.appID == id }) else { return }
        throw apps.unknownApp(id)
    }
    /// Write transactions of the store since start.
    public nonisolated var storeWrites: Int { store.writeCount }
    /// The store's commits since start, and the newest of them known to be on disk: for the
    /// tests of what an answer waits for.
    public nonisolated var storeCommits: (all: Int, onDisk: Int) { store.commitCounts }

    /// Answers when the broker's executor is free: what the watchdog pets with.
    public func heartbeat() {}

    public func appList() -> [AppManifest] {
        apps.manifests.values.sorted { $0.id < $1.id }
    }

    /// The activity type an activation without one gets: the app's first declared type.
    public func defaultActivityType(app appID: AppID?, session: String) throws(BrokerError) -> String {
        let id = appID ?? SessionID(session).flatMap { drivers[$0]?.session.appID } ?? AppID("")
        let app = try apps.manifest(id)
        guard let type = app.activityTypes.first else {
            throw BrokerError(.invalidRequest, "app '\(id)' declares no activity types; an activation cannot carry an activity")
        }
        return type
    }

    /// The session a person means: a full id, or a prefix of at least 4 characters that only
    /// one session's id starts with (an ambiguous prefix lists the candidates).
    public func resolveSession(_ text: String, visibleTo requester: SessionID? = nil) throws(BrokerError) -> SessionID {
        let typed = text.lowercased()
        if let id = SessionID(typed) { return id }
        // A scene resolves prefixes among its own app's sessions only: candidates of other apps
        // are neither matched nor listed.
        let app = requester.flatMap { drivers[$0]?.session.appID }
        guard typed.count >= 4, typed.allSatisfy({ $0.isHexDigit || $0 == "-" }) else {
            throw BrokerError(.unknownSession, "'\(text)' is not a session id nor a prefix of at least 4 characters of one; `wmctl sessions` lists them")
        }
        let matches = allSessions.filter { (app == nil || $0.appID == app) && $0.id.description.hasPrefix(typed) }
            .sorted { $0.createdAt < $1.createdAt }
        switch matches.count {
        case 1: return matches[0].id
        case 0:
            if let gone = discarded.first(withPrefix: typed) { return gone }
            throw BrokerError(.unknownSession, "no session starts with '\(text)'; `wmctl sessions` lists them")
        default:
            let listed = matches.prefix(10).map { "\($0.id) (\($0.title.isEmpty ? $0.appID.rawValue : $0.title))" }
            throw BrokerError(.invalidRequest, "'\(text)' matches \(matches.count) sessions; type more of the id: \(listed.joined(separator: ", "))")
        }
    }

    /// The session has a running process that finished connecting: it can take commands.
    func hasConnectedScene(_ id: SessionID) -> Bool {
        drivers[id]?.isConnected == true
    }

    func existingSession(_ id: SessionID) throws(BrokerError) -> SceneSession {
        try driver(id).session
    }

    /// Every session, in no particular order.
    var allSessions: some Collection<SceneSession> { drivers.values.lazy.map(\.session) }

    /// The session a live process shows; nil for a prewarmed one not bound yet (or one gone).
    func sessionShown(by worker: WorkerHandle) -> SessionDriver? {
        processes.shown[ObjectIdentifier(worker)].flatMap { drivers[$0] }
    }

    /// The session's process is gone (or going): nothing it sends is the session's any more.
    func unbind(_ driver: SessionDriver) {
        guard let worker = driver.worker else { return }
        processes.shown[ObjectIdentifier(worker)] = nil
        driver.worker = nil
        driver.windowHandle = nil
    }

    // MARK: - Events

    /// Events matching `filter`, from now on, until `unsubscribe`.
    package func subscribe(_ filter: EventFilter = .all) -> (UUID, AsyncStream<EventRecord>) {
        let subscribed = events.subscribe(filter)
        return (subscribed.id, subscribed.events)
    }

    /// The same, after the newest `recent` matching events from before now (`replayed` of them).
    package func subscribe(_ filter: EventFilter, recent: Int) -> (id: UUID, events: AsyncStream<EventRecord>, replayed: Int) {
        events.subscribe(filter, recent: min(recent, EventHub.recentKept))
    }

    /// Events matching `filter`, from now on, added to `batches` until `unsubscribe`; the
    /// batches finish when the broker stops.
    func subscribe<Item>(_ filter: EventFilter = .all, batching batches: EventBatches<Item>, as item: @escaping @Sendable (EventRecord) -> Item) -> UUID {
        events.subscribe(filter, sink: .call({ batches.add(item($0)) }, finished: { batches.finish() }))
    }

    public func unsubscribe(_ id: UUID) {
        events.unsubscribe(id)
    }

    /// Publishes an event about a session (or, with nil, about the broker as a whole).
    func emit(_ sessionID: SessionID?, app: AppID = "", _ event: BrokerEvent) {
        let title = sessionID.flatMap { drivers[$0]?.session.title } ?? ""
        let record = EventRecord(time: Date(), session: sessionID, app: app, title: title, event: event)
        // The steps an operator follows a scene by (open, spawn, background, restore, reclaim,
        // close, crash) at info, once each; every other event at debug.
        let name = event.name
        events.log.log(
            Self.operatorEvents.contains(name) ? .info : .debug, "\(name) \(event.detail)",
            metadata: ["SESSION_ID": "\(sessionID?.description ?? "")", "APP_ID": "\(app)", "EVENT": "\(name)"])
        events.publish(record)
    }

    static let operatorEvents: Set<String> = [
        "created", "launched", "didEnterBackground", "restoreInteractionState", "reclaimed", "exited", "crashed", "discarded",
    ]

    func persist(_ id: SessionID) async {
        guard let session = drivers[id]?.session else { return }
        do {
            try await store.update(session, attached: drivers[id]?.worker != nil)
        } catch {
            logger.error("cannot persist session", metadata: ["session": "\(id)", "error": "\(error)"])
        }
        drivers[id]?.reindex(in: self)
    }
}
