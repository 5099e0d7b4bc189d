import Foundation
import IPCWire

/// Prewarmed workers (the zygote/prewarm idea from Android and iOS): for an app whose manifest
/// says `"prewarm": N`, N processes are kept started, handshaken and idle, with no session.
/// Opening or activating a scene of that app binds one of them instead of spawning; the pool
/// refills in the background. Under memory pressure the pools are emptied first, before any
/// scene is warned or reclaimed, and stay empty until the level is back to normal.
///
/// The pools own their workers until one is taken; they live in the broker's isolation (their
/// methods take the broker as an `isolated` parameter), like a `SessionDriver`.
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
    func refill(in broker: isolated Broker) {
        guard !closed, broker.memory.level == .normal else { return }
        for app in broker.apps.manifests.values.sorted(by: { $0.id < $1.id }) where app.prewarm > 0 {
            // An app in a crash loop is not refilled either: refills count against its start
            // limit like launches, and the pool tries again once the wait is over.
            if let wait = broker.processes.admission.retryAfter(app.id, now: broker.configuration.clock.now) {
                scheduleRefill(after: wait, in: broker)
                continue
            }
            let missing = app.prewarm - readyCount(app.id) - (warming[app.id] ?? 0)
            for _ in 0..<max(0, missing) {
                // Idle processes never take the room scenes need.
                guard broker.processes.admission.hasRoomForIdle(live: broker.processes.live, idle: count) else { return }
                warming[app.id, default: 0] += 1
                Task { await self.warm(app, in: broker) }
            }
        }
    }

    /// `refill`, once the open that took a worker has been answered. Started from the open
    /// itself, the refill's first steps (a socket pair, the output pipes, the zygote's fork
    /// request) ran on the event loop before the open's answer was written: the broker's
    /// queue took them up while the open's caller waited for its reply.
    func refillAfterAnswer(in broker: isolated Broker) {
        Task {
            try? await WireRuntime.sleep(for: Self.afterAnswer)
            self.refill(in: broker)
        }
    }

    /// Long enough for the answer, already queued, to be written first.
    static let afterAnswer: Duration = .milliseconds(1)

    private func warm(_ app: AppManifest, in broker: isolated Broker) async {
        defer { warming[app.id, default: 1] -= 1 }
        let worker: WorkerHandle
        do {
            worker = try await broker.launcher.launch(app: app, sessionID: nil)
        } catch {
            failed(app, error, "cannot prewarm a worker", in: broker)
            return
        }
        broker.supervise(worker)
        do {
            try await worker.waitForHello(timeout: broker.configuration.launchTimeout)
        } catch {
            worker.kill()
            failed(app, error, "a prewarmed worker did not start", in: broker)
            return
        }
        // Started from a manifest that changed meanwhile (a reload): not one to bind.
        guard let current = broker.apps.manifests[app.id], current == app else {
            await worker.markIntendedEnd(.appChanged)
            worker.kill()
            return
        }
        guard !closed, broker.memory.level == .normal, readyCount(app.id) < current.prewarm else {
            await worker.markIntendedEnd(.memoryPressure)
            worker.kill()
            return
        }
        ready[app.id, default: []].append(worker)
        // What the system has left changed; no session's worker did (a pool's are none).
        broker.memory.wake?(.newcomers)
    }

    /// A refill that failed counts against the app's start limit; the pool is topped up again
    /// (in a moment, or when the crash loop's wait is over), never in a tight loop.
    private func failed(_ app: AppManifest, _ error: any Error, _ what: String, in broker: isolated Broker) {
        broker.processes.admission.recordFailure(app.id, now: broker.configuration.clock.now)
        if let wait = broker.processes.admission.retryAfter(app.id, now: broker.configuration.clock.now) {
            broker.logger.warning("\(what); the app is in a crash loop, its pool waits", metadata: [
                "app": "\(app.id)", "error": "\(error)", "retryAfter": "\(wait.formattedSeconds)",
            ])
            scheduleRefill(after: wait, in: broker)
        } else {
            broker.logger.warning("\(what)", metadata: ["app": "\(app.id)", "error": "\(error)"])
            scheduleRefill(after: .milliseconds(500), in: broker)
        }
    }

    /// One refill pending at a time.
    private func scheduleRefill(after wait: Duration, in broker: isolated Broker) {
        guard !refillScheduled else { return }
        refillScheduled = true
        Task {
            try? await broker.configuration.clock.sleep(for: wait)
            self.refillScheduled = false
            self.refill(in: broker)
        }
    }

    /// A ready prewarmed worker of the app, taken out of its pool. The pool refills once the
    /// open that took it is over (`bringForward`): a spawn now would compete for the CPU with
    /// the very launch the pool exists to speed up.
    func take(_ appID: AppID, in broker: isolated Broker) -> WorkerHandle? {
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
    func drain(_ app: AppID? = nil, reason: DisconnectReason, in broker: isolated Broker) async -> Int {
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
                broker.emit(nil, app: appID, .exited(reason, pid: worker.pid))
                count += 1
            }
        }
        if count > 0 { broker.logger.notice("emptied the prewarm pools", metadata: ["workers": "\(count)", "reason": "\(reason)"]) }
        return count
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
