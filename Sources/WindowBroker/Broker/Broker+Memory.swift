import Foundation
import IPCWire

/// What the broker knows about memory: the level (owned here, computed by the pure
/// `PressurePolicy`), the last readings, and what reclaim has done.
struct MemoryState: Sendable {
    var policy: PressurePolicy
    var inputs = PressureInputs(psi: nil, memInfo: nil, workersPSS: 0, budget: nil)
    var reasons: [String] = []
    var pss: [SessionID: UInt64] = [:]
    var psiSource = "not sampled yet"
    var lastAction: ContinuousClock.Instant?
    var reclaimedCount = 0
    var reclaimedBytes: UInt64 = 0
    /// Readings acted on since start.
    var samples: UInt64 = 0
    var wake: (@Sendable () -> Void)?
}

/// Memory pressure: warnings to background scenes, then save-before-reclaim, least recently
/// used first. Foreground scenes are never reclaimed.
extension Broker {
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

    func attachMemoryMonitor(source: String, wake: @escaping @Sendable () -> Void) {
        memory.psiSource = source
        memory.wake = wake
    }

    func workerPIDs() -> [SessionID: pid_t] {
        Dictionary(uniqueKeysWithValues: drivers.values.compactMap { driver in driver.worker.map { (driver.id, $0.pid) } })
    }

    /// What the live workers use, from their last samples.
    private var liveWorkersPSS: UInt64 {
        memory.pss.filter { drivers[$0.key]?.worker != nil }.values.reduce(0, +)
    }

    /// The memory picture `wmctl pressure` and `status` show.
    public func pressureReport() -> PressureReport {
        PressureReport(
            level: memory.policy.level, reasons: memory.reasons, inputs: memory.inputs, psiSource: memory.psiSource,
            workersPSS: liveWorkersPSS, budget: memoryConfiguration.budget,
            reclaimedCount: memory.reclaimedCount, reclaimedBytes: memory.reclaimedBytes, samples: memory.samples)
    }

    /// New readings from the monitor: update the level and respond when it calls for it.
    func applyPressure(_ inputs: PressureInputs, pss: [SessionID: UInt64]) async {
        memory.inputs = inputs
        memory.pss = pss
        memory.samples += 1
        let before = memory.policy.level
        let (level, now, reasons) = memory.policy.update(inputs, now: configuration.clock.now)
        memory.reasons = reasons
        if level != before {
            logger.notice("memory pressure level changed", metadata: ["from": "\(before)", "to": "\(level)", "reasons": "\(reasons.joined(separator: "; "))"])
            emit(nil, .pressureChanged(from: before, to: level, reasons: reasons, simulated: false))
        }
        // Hysteresis holds the reported level; actions follow what the inputs call for now, so a
        // level held at critical after the budget is met reclaims nothing more.
        guard now > .normal else {
            if level == .normal { refillPools() }
            return
        }
        let due = level > before || memory.lastAction.map { configuration.clock.now - $0 >= memoryConfiguration.minimumActionInterval } ?? true
        guard due else { return }
        _ = await respond(to: now, simulated: false, saving: true)
    }

    /// `wmctl pressure simulate`: the same response a real signal gets.
    public func simulatePressure(_ level: PressureLevel, saving: Bool) async -> PressureOutcome {
        emit(nil, .pressureChanged(from: memory.policy.level, to: level, reasons: [], simulated: true))
        return await respond(to: level, simulated: true, saving: saving)
    }

    /// warning: every background scene is told to trim. critical: background scenes are
    /// reclaimed, least recently used first: down to the budget minus its margin when the
    /// budget is what is exceeded; one per action interval for kernel pressure (the level is
    /// re-read in between); all of them when simulated. LRU order decides which scenes go;
    /// they then save and stop side by side, `reclaimConcurrency` at a time.
    private func respond(to level: PressureLevel, simulated: Bool, saving: Bool) async -> PressureOutcome {
        memory.lastAction = configuration.clock.now
        var outcome = PressureOutcome(level: level)
        // Idle prewarmed processes go before any scene is disturbed.
        await drainPools(reason: .memoryPressure)
        let background = allSessions
            .filter { $0.state == .background && drivers[$0.id]?.worker != nil }
            .sorted { $0.lastActiveAt < $1.lastActiveAt }
        if level == .warning {
            let freed = await concurrently(background.map(\.id), limit: background.count) { id in
                await self.warn(id, level: level)
            }
            outcome.warned = background.compactMap { session in freed[session.id]?.map { (session.id, $0) } }
            return outcome
        }
        let used = liveWorkersPSS
        let target = memoryConfiguration.budget.map { UInt64(Double($0) * (1 - memoryConfiguration.budgetMargin)) }
        var victims: [SessionID] = []
        if simulated {
            victims = background.map(\.id)
        } else if let target, used > target {
            var remaining = used
            for session in background where remaining > target {
                victims.append(session.id)
                let freed = memory.pss[session.id] ?? 0
                remaining = remaining > freed ? remaining - freed : 0
            }
        } else {
            victims = background.prefix(1).map(\.id)
        }
        let results = await concurrently(victims, limit: configuration.reclaimConcurrency) { id in
            await self.reclaimForMemory(id, level: level, saving: saving)
        }
        outcome.reclaimed = victims.compactMap { results[$0] ?? nil }
        let freed = outcome.reclaimed.reduce(0) { $0 + $1.freed }
        if let target, used - min(used, freed) > target, !simulated {
            logger.warning("over the memory budget with no background scene left to reclaim",
                           metadata: ["used": "\((used - min(used, freed)).mebibytes)", "target": "\(target.mebibytes)"])
        }
        memory.wake?()
        return outcome
    }

    private func warn(_ id: SessionID, level: PressureLevel) async -> UInt64? {
        do {
            let reply = try await command(id, .memoryWarning(.with { $0.level = level.wire }),
                                          timeout: configuration.workerTimeout, doing: "didReceiveMemoryWarning")
            var freed: UInt64 = 0
            if case .memoryWarning(let answer)? = reply { freed = answer.freedBytes }
            emit(id, app: drivers[id]?.session.appID ?? "", .memoryWarning(level, freedBytes: freed))
            return freed
        } catch {
            logger.warning("memory warning not delivered", metadata: ["session": "\(id)", "error": "\(error)"])
            return nil
        }
    }

    /// The reclaim path with reason `memoryPressure`; without saving (benchmark baseline
    /// only), the process is simply killed, as systemd-oomd or earlyoom would.
    private func reclaimForMemory(_ id: SessionID, level: PressureLevel, saving: Bool) async -> ReclaimRecord? {
        let freed = memory.pss[id] ?? 0
        let startedAt = Date()
        let started = ContinuousClock.now
        do {
            let notes: [String]
            if saving {
                notes = try await reclaim(id, reason: .memoryPressure).notes
            } else {
                notes = try await onSession(id) {
                    guard drivers[id]?.worker != nil, drivers[id]?.session.state == .background else { return [] }
                    await terminate(id, reason: .memoryPressure)  // records and persists the end
                    return ["killed without saving"]
                }
            }
            let seconds = (ContinuousClock.now - started).seconds
            let event = BrokerEvent.reclaimed(level, freedBytes: freed, seconds: seconds, notes: notes)
            let detail = event.detail
            emit(id, app: drivers[id]?.session.appID ?? "", event)
            return ReclaimRecord(id: id, freed: freed, seconds: seconds, startedAt: startedAt, detail: detail)
        } catch {
            logger.warning("reclaim failed", metadata: ["session": "\(id)", "error": "\(error)"])
            return nil
        }
    }

    /// Refuses a launch when the foreground alone already exceeds the budget: nothing
    /// else is killed to make room for it.
    func checkRoomForLaunch() throws {
        guard let budget = memoryConfiguration.budget else { return }
        let foreground = allSessions.filter { $0.state.isForeground }.compactMap { memory.pss[$0.id] }.reduce(0, +)
        if foreground > budget {
            throw BrokerError(.resourceExhausted, "not enough memory for another scene: the foreground scenes use \(foreground.mebibytes) of the \(budget.mebibytes) budget; close or background one first")
        }
    }

}

extension PressureLevel {
    var wire: Windowbroker_V1_PressureLevel {
        switch self {
        case .normal: .normal
        case .warning: .warning
        case .critical: .critical
        }
    }

    init(wire: Windowbroker_V1_PressureLevel) {
        switch wire {
        case .warning: self = .warning
        case .critical: self = .critical
        default: self = .normal
        }
    }
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
