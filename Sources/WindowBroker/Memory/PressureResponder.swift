import Foundation
import IPCWire
import Logging

/// What the broker does about memory: it owns the level (computed by the pure
/// `PressurePolicy` from the monitor's readings), the last readings, and what reclaim has
/// done, and it responds: background scenes are warned, then saved and reclaimed, least
/// recently used first. Foreground scenes are never reclaimed. It lives in its host's
/// isolation (its methods take it as an `isolated` parameter), like a `SessionDriver`, and
/// reaches nothing of the broker but what `MemoryHost` lists.
final class PressureResponder {
    let configuration: MemoryConfiguration
    var policy: PressurePolicy
    var inputs = PressureInputs(psi: nil, memInfo: nil, workersPSS: 0, budget: nil)
    var reasons: [String] = []
    /// Each live worker's proportional set size, from its last sample.
    var pss: [SessionID: UInt64] = [:]
    var psiSource = "not sampled yet"
    var lastAction: ContinuousClock.Instant?
    var reclaimedCount = 0
    var reclaimedBytes: UInt64 = 0
    /// Readings acted on since start.
    var samples: UInt64 = 0
    /// Asks the monitor for a reading now, of the workers in the scope (after a reclaim, a
    /// refilled pool, a launch).
    var wake: (@Sendable (SampleScope) -> Void)?
    /// A reading asked for by a launch is due (`launched`).
    var launchReadingDue = false
    /// How long after a launch its reading comes.
    static let readingAfterLaunch: Duration = .milliseconds(100)
    /// The broker's own heap, trimmed after processes end.
    let heap = HeapTrim()

    init(configuration: MemoryConfiguration) {
        self.configuration = configuration
        policy = PressurePolicy(thresholds: configuration.thresholds)
    }

    var level: PressureLevel { policy.level }

    /// A launch changes what workers use: the monitor reads them shortly after, not at the next
    /// interval. Not at once: the new scene is then in the middle of its open, which a reading
    /// of every worker (its `/proc` files, on the other CPU) competed with (a fifth of the
    /// broker's CPU in a run of cold opens), and its own memory is still growing. Launches
    /// close together share one reading.
    func launched(in host: isolated some MemoryHost) {
        guard !launchReadingDue, wake != nil else { return }
        launchReadingDue = true
        Task {
            try? await WireRuntime.sleep(for: Self.readingAfterLaunch)
            host.launchReadingTaken()
        }
    }

    /// A reclaimed scene's process is gone: counted the moment its memory is given back, so
    /// `pressure` never shows the smaller footprint without the reclaim that made it.
    func recordReclaimed(_ id: SessionID) {
        reclaimedCount += 1
        reclaimedBytes += pss[id] ?? 0
    }

    /// What the live workers use, from their last samples.
    private func liveWorkersPSS(in host: isolated some MemoryHost) -> UInt64 {
        pss.filter { host.hasProcess($0.key) }.values.reduce(0, +)
    }

    /// The memory picture `wmctl pressure` and `status` show.
    func report(in host: isolated some MemoryHost) -> PressureReport {
        PressureReport(
            level: policy.level, reasons: reasons, inputs: inputs, psiSource: psiSource,
            workersPSS: liveWorkersPSS(in: host), budget: configuration.budget,
            reclaimedCount: reclaimedCount, reclaimedBytes: reclaimedBytes, samples: samples)
    }

    /// New readings from the monitor: update the level and respond when it calls for it.
    func apply(_ inputs: PressureInputs, pss: [SessionID: UInt64], in host: isolated some MemoryHost) async {
        self.inputs = inputs
        self.pss = pss
        samples += 1
        let before = policy.level
        let (level, now, reasons) = policy.update(inputs, now: host.configuration.clock.now)
        self.reasons = reasons
        if level != before {
            host.logger.notice("memory pressure level changed", metadata: ["from": "\(before)", "to": "\(level)", "reasons": "\(reasons.joined(separator: "; "))"])
            host.emit(nil, app: "", .pressureChanged(from: before, to: level, reasons: reasons, simulated: false))
        }
        // Hysteresis holds the reported level; actions follow what the inputs call for now, so a
        // level held at critical after the budget is met reclaims nothing more.
        guard now > .normal else {
            if level == .normal { host.refillPrewarmPools() }
            return
        }
        let due = level > before || lastAction.map { host.configuration.clock.now - $0 >= configuration.minimumActionInterval } ?? true
        guard due else { return }
        _ = await respond(to: now, simulated: false, saving: true, in: host)
    }

    /// `wmctl pressure simulate`: the same response a real signal gets.
    func simulate(_ level: PressureLevel, saving: Bool, in host: isolated some MemoryHost) async -> PressureOutcome {
        host.emit(nil, app: "", .pressureChanged(from: policy.level, to: level, reasons: [], simulated: true))
        return await respond(to: level, simulated: true, saving: saving, in: host)
    }

    /// warning: every background scene is told to trim. critical: background scenes are
    /// reclaimed, least recently used first: down to the budget minus its margin when the
    /// budget is what is exceeded; one per action interval for kernel pressure (the level is
    /// re-read in between); all of them when simulated. LRU order decides which scenes go;
    /// they then save and stop side by side, `reclaimConcurrency` at a time.
    private func respond(to level: PressureLevel, simulated: Bool, saving: Bool, in host: isolated some MemoryHost) async -> PressureOutcome {
        lastAction = host.configuration.clock.now
        var outcome = PressureOutcome(level: level)
        // Idle prewarmed processes go before any scene is disturbed.
        await host.emptyPrewarmPools()
        let background = host.sessions
            .filter { $0.state == .background && host.hasProcess($0.id) }
            .sorted { $0.lastActiveAt < $1.lastActiveAt }
        if level == .warning {
            let freed = await host.concurrently(background.map(\.id), limit: background.count) { id in
                await host.warn(id, level: level)
            }
            outcome.warned = background.compactMap { session in freed[session.id]?.map { (session.id, $0) } }
            return outcome
        }
        let used = liveWorkersPSS(in: host)
        let target = configuration.budget.map { UInt64(Double($0) * (1 - configuration.budgetMargin)) }
        var victims: [SessionID] = []
        if simulated {
            victims = background.map(\.id)
        } else if let target, used > target {
            var remaining = used
            for session in background where remaining > target {
                victims.append(session.id)
                let freed = pss[session.id] ?? 0
                remaining = remaining > freed ? remaining - freed : 0
            }
        } else {
            victims = background.prefix(1).map(\.id)
        }
        let results = await host.concurrently(victims, limit: host.configuration.reclaimConcurrency) { id in
            await host.reclaimForMemory(id, level: level, saving: saving)
        }
        outcome.reclaimed = victims.compactMap { results[$0] ?? nil }
        let freed = outcome.reclaimed.reduce(0) { $0 + $1.freed }
        if let target, used - min(used, freed) > target, !simulated {
            host.logger.warning("over the memory budget with no background scene left to reclaim",
                           metadata: ["used": "\((used - min(used, freed)).mebibytes)", "target": "\(target.mebibytes)"])
        }
        wake?(.changed)
        return outcome
    }

    /// Refuses a launch when the foreground alone already exceeds the budget: nothing
    /// else is killed to make room for it.
    func checkRoomForLaunch(in host: isolated some MemoryHost) throws {
        guard let budget = configuration.budget else { return }
        let foreground = host.sessions.filter { $0.state.isForeground }.compactMap { pss[$0.id] }.reduce(0, +)
        if foreground > budget {
            throw BrokerError(.resourceExhausted, "not enough memory for another scene: the foreground scenes use \(foreground.mebibytes) of the \(budget.mebibytes) budget; close or background one first")
        }
    }
}

/// What the pressure responder may use of its owner (the broker): the sessions and whether
/// each has a process, warning and reclaiming one, the prewarm pools, events and the log.
protocol MemoryHost: Actor {
    var configuration: BrokerConfiguration { get }
    var logger: Logger { get }
    var sessions: [SceneSession] { get }
    func hasProcess(_ id: SessionID) -> Bool
    /// didReceiveMemoryWarning for one background scene; what it says it freed.
    func warn(_ id: SessionID, level: PressureLevel) async -> UInt64?
    /// Saves (when `saving`) and ends a background scene's process; what that gave back.
    func reclaimForMemory(_ id: SessionID, level: PressureLevel, saving: Bool) async -> ReclaimRecord?
    /// `body` for each of `ids`, at most `limit` at a time.
    func concurrently<T: Sendable>(_ ids: [SessionID], limit: Int, _ body: @escaping @Sendable (SessionID) async -> T) async -> [SessionID: T]
    /// Idle prewarmed processes go first under pressure, and come back once it is over.
    func emptyPrewarmPools() async
    func refillPrewarmPools()
    /// The reading a launch asked for is due now.
    func launchReadingTaken()
    func emit(_ id: SessionID?, app: AppID, _ event: BrokerEvent)
}

/// What a response to pressure did.
public struct PressureOutcome: Sendable {
    public var level: PressureLevel
    public var warned: [(SessionID, UInt64)] = []
    public var reclaimed: [ReclaimRecord] = []
}

public struct ReclaimRecord: Sendable {
    public var id: SessionID
    public var freed: UInt64
    public var seconds: Double
    public var startedAt: Date
    public var detail: String
}

/// Memory pressure as the broker sees it now: the level and why, the last readings, what the
/// live workers use against the budget, and what was reclaimed since start.
public struct PressureReport: Sendable {
    public var level: PressureLevel
    public var reasons: [String]
    public var inputs: PressureInputs
    /// Where PSI is read and how it is watched (a trigger, or polling).
    public var psiSource: String
    public var workersPSS: UInt64
    public var budget: UInt64?
    public var reclaimedCount: Int
    public var reclaimedBytes: UInt64
    /// How many readings the broker has acted on since it started.
    public var samples: UInt64
}
