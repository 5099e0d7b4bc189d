import Foundation
import IPCWire

/// Prewarmed workers (the zygote/prewarm idea from Android and iOS): for an app whose manifest
/// says `"prewarm": N`, N processes are kept started, handshaken and idle, with no session.
/// Opening or activating a scene of that app binds one of them instead of spawning; the pool
/// refills in the background. Under memory pressure the pools are emptied first, before any
/// scene is warned or reclaimed, and stay empty until the level is back to normal.
struct PrewarmPools {
    /// Ready workers per app, oldest first.
    var ready: [AppID: [WorkerHandle]] = [:]
    /// Spawns under way per app.
    var warming: [AppID: Int] = [:]
    /// Set for good once the broker stops.
    var closed = false
    /// A refill is scheduled (after a failed one, or for when a crash loop's wait is over).
    var refillScheduled = false

    var count: Int { ready.values.reduce(0) { $0 + $1.count } + warming.values.reduce(0, +) }

    mutating func remove(_ worker: WorkerHandle) {
        ready[worker.appID]?.removeAll { $0 === worker }
    }
}

extension Broker {
    /// Tops every app's pool up to its `prewarm` count, in the background.
    func refillPools() {
        guard !pools.closed, memory.level == .normal else { return }
        for app in apps.manifests.values.sorted(by: { $0.id < $1.id }) where app.prewarm > 0 {
            // An app in a crash loop is not refilled either: refills count against its start
            // limit like launches, and the pool tries again once the wait is over.
            if let wait = startLimit.retryAfter(app.id, now: configuration.clock.now) {
                scheduleRefill(after: wait)
                continue
            }
            let missing = app.prewarm - (pools.ready[app.id]?.count ?? 0) - (pools.warming[app.id] ?? 0)
            for _ in 0..<max(0, missing) {
                // Idle processes never take the room scenes need.
                guard workers.count + launchesInFlight + pools.count < configuration.maxLiveWorkers else { return }
                pools.warming[app.id, default: 0] += 1
                Task { await self.warm(app) }
            }
        }
    }

    private func warm(_ app: AppManifest) async {
        defer { pools.warming[app.id, default: 1] -= 1 }
        let worker: WorkerHandle
        do {
            worker = try await launcher.launch(app: app, sessionID: nil)
        } catch {
            prewarmFailed(app, error, "cannot prewarm a worker")
            return
        }
        supervise(worker)
        do {
            try await worker.waitForHello(timeout: configuration.launchTimeout)
        } catch {
            worker.kill()
            prewarmFailed(app, error, "a prewarmed worker did not start")
            return
        }
        let wanted = apps.manifests[app.id]?.prewarm ?? 0
        guard !pools.closed, memory.level == .normal, (pools.ready[app.id]?.count ?? 0) < wanted else {
            await worker.markIntendedEnd(.memoryPressure)
            worker.kill()
            return
        }
        pools.ready[app.id, default: []].append(worker)
        memory.wake?()
    }

    /// A ready prewarmed worker of the app, taken out of its pool. The pool refills once the
    /// open that took it is over (`bringForward`): a spawn now would compete for the CPU with
    /// the very launch the pool exists to speed up.
    /// A refill that failed counts against the app's start limit; the pool is topped up again
    /// (in a moment, or when the crash loop's wait is over), never in a tight loop.
    private func prewarmFailed(_ app: AppManifest, _ error: any Error, _ what: String) {
        startLimit.recordFailure(app.id, now: configuration.clock.now)
        if let wait = startLimit.retryAfter(app.id, now: configuration.clock.now) {
            logger.warning("\(what); the app is in a crash loop, its pool waits", metadata: [
                "app": "\(app.id)", "error": "\(error)", "retryAfter": "\(wait.formattedSeconds)",
            ])
            scheduleRefill(after: wait)
        } else {
            logger.warning("\(what)", metadata: ["app": "\(app.id)", "error": "\(error)"])
            scheduleRefill(after: .milliseconds(500))
        }
    }

    /// One refill pending at a time.
    private func scheduleRefill(after wait: Duration) {
        guard !pools.refillScheduled else { return }
        pools.refillScheduled = true
        Task {
            try? await self.configuration.clock.sleep(for: wait)
            self.scheduledRefill()
        }
    }

    private func scheduledRefill() {
        pools.refillScheduled = false
        refillPools()
    }

    /// Prewarmed workers of the app waiting to be bound (tests and `status`).
    public func prewarmedCount(_ appID: AppID) -> Int {
        pools.ready[appID]?.count ?? 0
    }

    func takePrewarmed(_ appID: AppID) async -> WorkerHandle? {
        while let worker = pools.ready[appID]?.first {
            pools.ready[appID]?.removeFirst()
            if await worker.isReady { return worker }
            worker.kill()  // died while idle: its supervisor reaps it
        }
        return nil
    }

    /// Empties every pool now (SIGKILL: an idle worker holds nothing worth saving). Returns how
    /// many workers went.
    @discardableResult
    func drainPools(reason: DisconnectReason) async -> Int {
        let drained = pools.ready
        pools.ready = [:]
        var count = 0
        for (appID, workers) in drained.sorted(by: { $0.key < $1.key }) {
            for worker in workers {
                await worker.markIntendedEnd(reason)
                worker.kill()
                emit(nil, app: appID, .exited(reason, pid: worker.pid))
                count += 1
            }
        }
        if count > 0 { logger.notice("emptied the prewarm pools", metadata: ["workers": "\(count)", "reason": "\(reason)"]) }
        return count
    }

    /// Ready prewarmed workers per app, for every app that asks for some.
    public func prewarmedCounts() -> [AppID: Int] {
        var counts: [AppID: Int] = [:]
        for app in apps.manifests.values where app.prewarm > 0 { counts[app.id] = pools.ready[app.id]?.count ?? 0 }
        return counts
    }

    func removeFromPool(_ worker: WorkerHandle) {
        pools.remove(worker)
    }
}
