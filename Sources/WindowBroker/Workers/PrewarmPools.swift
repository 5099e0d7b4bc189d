import Foundation
import IPCWire
import Logging

/// Prewarmed workers (the zygote/prewarm idea from Android and iOS): for an app whose manifest
/// says `"prewarm": N`, N processes are kept started, handshaken and idle, with no session.
/// Opening or activating a scene of that app binds one of them instead of spawning; the pool
/// refills in the background. Under memory pressure the pools are emptied first, before any
/// scene is warned or reclaimed, and stay empty until the level is back to normal.
///
/// The pools own their workers until one is taken; they live in their host's isolation (their
/// methods take it as an `isolated` parameter), like a `SessionDriver`, and reach nothing of
/// the broker but what `PoolHost` lists.
final class PrewarmPools {
    /// Ready workers per app, oldest first.
    private(set) var ready: [AppID: [WorkerHandle]] = [:]
    /// Spawns under way per app.
    private var warming: [AppID: Int] = [:]
    /// Set for good once the broker stops.
    var closed = false
    /// A refill is scheduled (after a failed one, or for when a crash loop's wait is over).
    private var refillScheduled = false

    /// Idle and warming workers: they count against `--max-workers` like scenes.
    var count: Int { ready.values.reduce(0) { $0 + $1.count } + warming.values.reduce(0, +) }

    /// A worker that ended while idle leaves its pool.
    func remove(_ worker: WorkerHandle) {
        ready[worker.appID]?.removeAll { $0 === worker }
    }

    /// Ready prewarmed workers of the app waiting to be bound.
    func readyCount(_ appID: AppID) -> Int {
        ready[appID]?.count ?? 0
    }

    /// Tops every app's pool up to its `prewarm` count, in the background.
    func refill(in host: isolated some PoolHost) {
        guard !closed, host.memoryLevel == .normal else { return }
        var compositorChecked = false
        for app in host.installedApps.sorted(by: { $0.id < $1.id }) where app.prewarm > 0 {
            // An app in a crash loop is not refilled either: refills count against its start
            // limit like launches, and the pool tries again once the wait is over.
            if let wait = host.crashLoopWait(app.id) {
                scheduleRefill(after: wait, in: host)
                continue
            }
            let missing = app.prewarm - readyCount(app.id) - (warming[app.id] ?? 0)
            // Not while the compositor is away: a worker started then would open no window, ever.
            if missing > 0, !compositorChecked {
                compositorChecked = true
                guard !host.compositorAway else { return }
            }
            for _ in 0..<max(0, missing) {
                // Idle processes never take the room scenes need.
                guard host.hasRoomForIdle(idle: count) else { return }
                warming[app.id, default: 0] += 1
                Task { await self.warm(app, in: host) }
            }
        }
    }

    /// `refill`, once the open that took a worker has been answered. Started from the open
    /// itself, the refill's first steps (a socket pair, the output pipes, the zygote's fork
    /// request) ran on the event loop before the open's answer was written: the broker's
    /// queue took them up while the open's caller waited for its reply.
    func refillAfterAnswer(in host: isolated some PoolHost) {
        Task {
            try? await WireRuntime.sleep(for: Self.afterAnswer)
            self.refill(in: host)
        }
    }

    /// Long enough for the answer, already queued, to be written first.
    static let afterAnswer: Duration = .milliseconds(1)

    private func warm(_ app: AppManifest, in host: isolated some PoolHost) async {
        defer { warming[app.id, default: 1] -= 1 }
        let worker: WorkerHandle
        do {
            worker = try await host.launchIdleWorker(app)
        } catch {
            failed(app, error, "cannot prewarm a worker", in: host)
            return
        }
        do {
            try await worker.waitForHello(timeout: host.launchTimeout)
        } catch {
            worker.kill()
            failed(app, error, "a prewarmed worker did not start", in: host)
            return
        }
        // Started from a manifest that changed meanwhile (a reload): not one to bind.
        guard let current = host.manifest(app.id), current == app else {
            await worker.markIntendedEnd(.appChanged)
            worker.kill()
            return
        }
        guard !closed, host.memoryLevel == .normal, readyCount(app.id) < current.prewarm else {
            await worker.markIntendedEnd(.memoryPressure)
            worker.kill()
            return
        }
        ready[app.id, default: []].append(worker)
        // What the system has left changed; no session's worker did (a pool's are none).
        host.memoryChanged()
    }

    /// A refill that failed counts against the app's start limit; the pool is topped up again
    /// (in a moment, or when the crash loop's wait is over), never in a tight loop.
    private func failed(_ app: AppManifest, _ error: any Error, _ what: String, in host: isolated some PoolHost) {
        host.launchFailed(app.id)
        if let wait = host.crashLoopWait(app.id) {
            host.logger.warning("\(what); the app is in a crash loop, its pool waits", metadata: [
                "app": "\(app.id)", "error": "\(error)", "retryAfter": "\(wait.formattedSeconds)",
            ])
            scheduleRefill(after: wait, in: host)
        } else {
            host.logger.warning("\(what)", metadata: ["app": "\(app.id)", "error": "\(error)"])
            scheduleRefill(after: .milliseconds(500), in: host)
        }
    }

    /// One refill pending at a time.
    private func scheduleRefill(after wait: Duration, in host: isolated some PoolHost) {
        guard !refillScheduled else { return }
        refillScheduled = true
        Task {
            try? await host.configuration.clock.sleep(for: wait)
            self.refillScheduled = false
            self.refill(in: host)
        }
    }

    /// A ready prewarmed worker of the app, taken out of its pool. The pool refills once the
    /// open that took it is over (`bringForward`): a spawn now would compete for the CPU with
    /// the very launch the pool exists to speed up.
    func take(_ appID: AppID, in host: isolated some PoolHost) -> WorkerHandle? {
        while let worker = ready[appID]?.first {
            ready[appID]?.removeFirst()
            if worker.isReady { return worker }
            worker.kill()  // died while idle: its supervisor reaps it
        }
        return nil
    }

    /// Empties every pool now, or only `app`'s (SIGKILL: an idle worker holds nothing worth
    /// saving). Returns how many workers went.
    @discardableResult
    func drain(_ app: AppID? = nil, reason: DisconnectReason, in host: isolated some PoolHost) async -> Int {
        let drained: [AppID: [WorkerHandle]]
        if let app {
            drained = ready[app].map { [app: $0] } ?? [:]
            ready[app] = nil
        } else {
            drained = ready
            ready = [:]
        }
        var count = 0
        for (appID, workers) in drained.sorted(by: { $0.key < $1.key }) {
            for worker in workers {
                await worker.markIntendedEnd(reason)
                worker.kill()
                host.emit(nil, app: appID, .exited(reason, pid: worker.pid))
                count += 1
            }
        }
        if count > 0 { host.logger.notice("emptied the prewarm pools", metadata: ["workers": "\(count)", "reason": "\(reason)"]) }
        return count
    }
}

/// What the prewarm pools may use of their owner (the broker): the apps, the memory level,
/// launch admission, starting an idle worker, events and the log.
protocol PoolHost: Actor {
    var configuration: BrokerConfiguration { get }
    var logger: Logger { get }
    var memoryLevel: PressureLevel { get }
    /// The broker has a display and nothing answers on it (until it does, `refill` again).
    var compositorAway: Bool { get }
    /// Every installed app's manifest, and one of them.
    var installedApps: [AppManifest] { get }
    func manifest(_ app: AppID) -> AppManifest?
    /// How long the app's crash loop still refuses launches; nil when it may launch.
    func crashLoopWait(_ app: AppID) -> Duration?
    /// Whether `idle` idle processes leave the room scenes need.
    func hasRoomForIdle(idle: Int) -> Bool
    func launchFailed(_ app: AppID)
    /// A worker with no session, already supervised, not yet said Hello.
    func launchIdleWorker(_ app: AppManifest) async throws -> WorkerHandle
    var launchTimeout: Duration { get }
    /// What the system has left changed: the memory monitor looks again.
    func memoryChanged()
    func emit(_ id: SessionID?, app: AppID, _ event: BrokerEvent)
}

extension Broker: PoolHost {
    var memoryLevel: PressureLevel { memory.level }
    var compositorAway: Bool { compositor.display.path != nil && !compositor.display.acceptsConnections }
    var installedApps: [AppManifest] { Array(apps.manifests.values) }
    func crashLoopWait(_ app: AppID) -> Duration? { processes.admission.retryAfter(app, now: configuration.clock.now) }
    func hasRoomForIdle(idle: Int) -> Bool { processes.admission.hasRoomForIdle(live: processes.live, idle: idle) }
    var launchTimeout: Duration { configuration.launchTimeout }
    func memoryChanged() { memory.wake?(.newcomers) }

    func launchIdleWorker(_ app: AppManifest) async throws -> WorkerHandle {
        let worker = try await launcher.launch(app: app, sessionID: nil)
        supervise(worker)
        return worker
    }
}

extension Broker {
    /// Prewarmed workers of the app waiting to be bound (tests and `status`).
    public func prewarmedCount(_ appID: AppID) -> Int {
        processes.pools.readyCount(appID)
    }

    /// Ready prewarmed workers per app, for every app that asks for some.
    public func prewarmedCounts() -> [AppID: Int] {
        var counts: [AppID: Int] = [:]
        for app in apps.manifests.values where app.prewarm > 0 { counts[app.id] = processes.pools.readyCount(app.id) }
        return counts
    }
}
