/// WindowBroker: the broker core.
///
/// `Broker` is the one owner of broker state (sessions, workers, focus, watchers). Control
/// connections (`Control/`) and worker connections (`Workers/`) decode frames and call into it;
/// it decides, drives each scene through the pure lifecycle plan (`Sessions/LifecyclePlan`),
/// persists through `Sessions/SessionStore`, and routes activations with
/// `Activation/ActivationRouter` and `Activation/FocusPolicy`.
import Foundation
import IPCWire
import Logging

public actor Broker {
    public let configuration: BrokerConfiguration
    public let memoryConfiguration: MemoryConfiguration
    let store: SessionStore
    let spawner: WorkerSpawner
    let logger: Logger
    let startedAt = Date()

    var apps: [String: AppManifest] = [:]
    var sessions: [UUID: SceneSession] = [:]
    var workers: [UUID: WorkerProcess] = [:]
    /// Sessions discarded during this run, so a late request gets "discarded" rather than "unknown".
    var discarded: Set<UUID> = []
    var watchers: [UUID: AsyncStream<LifecycleEvent>.Continuation] = [:]
    var memory: MemoryState
    /// Told the one-line status whenever it changes (systemd's STATUS=).
    private var statusObserver: (@Sendable (String) -> Void)?
    private var lastStatusLine = ""

    // Lifecycle operations run one at a time: each is a sequence of awaited worker replies,
    // and two interleaved sequences could break the callback order or the focus invariant.
    private var lifecycleBusy = false
    private var lifecycleWaiters: [CheckedContinuation<Void, Never>] = []

    public init(configuration: BrokerConfiguration, memory: MemoryConfiguration = MemoryConfiguration(), logger: Logger) async throws {
        self.configuration = configuration
        self.memoryConfiguration = memory
        self.memory = MemoryState(policy: PressurePolicy(thresholds: memory.thresholds))
        self.logger = logger
        self.store = try SessionStore(directory: configuration.stateDirectory)
        self.spawner = WorkerSpawner(environment: configuration.environment)
        for session in try await store.loadAll() {
            sessions[session.id] = session
        }
        reloadManifests()
        logger.info("broker state loaded", metadata: ["sessions": "\(sessions.count)", "apps": "\(apps.count)", "store": "\(store.path)"])
    }

    /// Re-reads the app manifests; bad ones are logged with file, field and reason, and skipped.
    @discardableResult
    public func reloadManifests() -> [ManifestProblem] {
        let loader = ManifestLoader(
            directories: configuration.appsDirectories,
            helperDirectory: configuration.helperDirectory,
            searchPath: (configuration.environment["PATH"] ?? "").split(separator: ":").map(String.init))
        let (loaded, problems) = loader.load()
        for problem in problems {
            logger.error("skipping app manifest", metadata: ["problem": "\(problem)"])
        }
        apps = loaded
        return problems
    }

    // MARK: - Serialising lifecycle operations

    func withLifecycleLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if lifecycleBusy {
            await withCheckedContinuation { lifecycleWaiters.append($0) }
        } else {
            lifecycleBusy = true
        }
        defer {
            if lifecycleWaiters.isEmpty { lifecycleBusy = false } else { lifecycleWaiters.removeFirst().resume() }
        }
        return try await body()
    }

    // MARK: - Queries

    public struct Status: Sendable {
        public var uptime: TimeInterval
        public var sessions: Int
        public var workers: Int
    }

    public func status() -> Status {
        Status(uptime: Date().timeIntervalSince(startedAt), sessions: sessions.count, workers: workers.count)
    }

    /// "Ready: 3 sessions, 1 worker".
    public var statusLine: String {
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        return "Ready: \(count(sessions.count, "session")), \(count(workers.count, "worker")), pressure \(memory.policy.level)"
    }

    public func observeStatus(_ observer: @escaping @Sendable (String) -> Void) {
        statusObserver = observer
        lastStatusLine = statusLine
    }

    private func publishStatusIfChanged() {
        let line = statusLine
        guard line != lastStatusLine else { return }
        lastStatusLine = line
        statusObserver?(line)
    }

    /// Answers when the broker's executor is free: what the watchdog pets with.
    public func heartbeat() {}

    public func appList() -> [AppManifest] {
        apps.values.sorted { $0.id < $1.id }
    }

    public func sessionList(appID: String?) -> [Windowbroker_V1_SessionInfo] {
        sessions.values
            .filter { appID == nil || $0.appID == appID }
            .sorted { $0.createdAt < $1.createdAt }
            .map { info($0, includeRestoration: false) }
    }

    public func sessionInfo(_ id: UUID) throws -> Windowbroker_V1_SessionInfo {
        info(try existingSession(id), includeRestoration: true)
    }

    func info(_ session: SceneSession, includeRestoration: Bool) -> Windowbroker_V1_SessionInfo {
        .with {
            $0.id = session.id.uuidString.lowercased()
            $0.appID = session.appID
            $0.configuration = session.configuration
            $0.role = session.role
            $0.title = session.title
            $0.state = session.state.wire
            $0.pid = workers[session.id]?.pid ?? 0
            $0.pssBytes = workers[session.id] != nil ? memory.pss[session.id] ?? 0 : 0
            $0.createdAt = session.createdAt.timeIntervalSince1970
            $0.lastActiveAt = session.lastActiveAt.timeIntervalSince1970
            $0.lastDisconnect = session.lastDisconnect?.description ?? ""
            $0.launchCount = UInt32(session.launchCount)
            $0.restorationSaved = session.restoration != nil
            if includeRestoration, let restoration = session.restoration {
                $0.restorationActivity = restoration.wire
            }
            if includeRestoration, let current = session.currentActivity {
                $0.currentActivity = current.wire
            }
        }
    }

    func existingSession(_ id: UUID) throws(BrokerError) -> SceneSession {
        if let session = sessions[id] { return session }
        if discarded.contains(id) {
            throw BrokerError(.sessionDiscarded, "session \(id.uuidString.lowercased()) was discarded (closed); open a new scene instead")
        }
        throw BrokerError(.unknownSession, "no session \(id.uuidString.lowercased()); `wmctl sessions` lists them")
    }

    // MARK: - Watchers

    public func addWatcher() -> (UUID, AsyncStream<LifecycleEvent>) {
        let id = UUID()
        // A slow watcher loses old events instead of stalling the broker.
        let (stream, continuation) = AsyncStream.makeStream(of: LifecycleEvent.self, bufferingPolicy: .bufferingNewest(1024))
        watchers[id] = continuation
        return (id, stream)
    }

    public func removeWatcher(_ id: UUID) {
        watchers.removeValue(forKey: id)?.finish()
    }

    func emit(_ sessionID: UUID, app: String, _ event: String, _ detail: String = "") {
        let record = LifecycleEvent.with {
            $0.time = Date().timeIntervalSince1970
            $0.sessionID = sessionID.uuidString.lowercased()
            $0.appID = app
            $0.event = event
            $0.detail = detail
        }
        logger.debug("lifecycle", metadata: ["session": "\(record.sessionID)", "app": "\(app)", "event": "\(event)", "detail": "\(detail)"])
        publish(record)
    }

    /// An event about the broker as a whole (no session), e.g. a pressure level change.
    func emitBrokerEvent(_ event: String, _ detail: String) {
        publish(.with {
            $0.time = Date().timeIntervalSince1970
            $0.event = event
            $0.detail = detail
        })
    }

    private func publish(_ record: LifecycleEvent) {
        for watcher in watchers.values { watcher.yield(record) }
        publishStatusIfChanged()
    }

    func persist(_ id: UUID) async {
        guard let session = sessions[id] else { return }
        do {
            try await store.update(session, attached: workers[id] != nil)
        } catch {
            logger.error("cannot persist session", metadata: ["session": "\(id)", "error": "\(error)"])
        }
    }
}
