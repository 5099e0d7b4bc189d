import Foundation
import IPCWire

/// What the broker knows about memory: the level (owned here, computed by the pure
/// `PressurePolicy`), the last readings, and what reclaim has done.
struct MemoryState: Sendable {
    var policy: PressurePolicy
    var inputs = PressureInputs(psi: nil, memInfo: nil, workersPSS: 0, budget: nil)
    var reasons: [String] = []
    var pss: [UUID: UInt64] = [:]
    var psiSource = "not sampled yet"
    var lastAction: ContinuousClock.Instant?
    var reclaimedCount = 0
    var reclaimedBytes: UInt64 = 0
    var wake: (@Sendable () -> Void)?
}

/// Memory pressure: warnings to background scenes, then save-before-reclaim, least recently
/// used first. Foreground scenes are never reclaimed.
extension Broker {
    public struct PressureOutcome: Sendable {
        public var level: PressureLevel
        public var warned: [(UUID, UInt64)] = []
        public var reclaimed: [(id: UUID, freed: UInt64, seconds: Double, detail: String)] = []
    }

    func attachMemoryMonitor(source: String, wake: @escaping @Sendable () -> Void) {
        memory.psiSource = source
        memory.wake = wake
    }

    func workerPIDs() -> [UUID: pid_t] {
        workers.mapValues(\.pid)
    }

    /// What the live workers use, from their last samples.
    private var liveWorkersPSS: UInt64 {
        memory.pss.filter { workers[$0.key] != nil }.values.reduce(0, +)
    }

    public func pressureReport() -> Windowbroker_V1_PressureReply {
        .with {
            $0.level = memory.policy.level.wire
            $0.someAvg10 = memory.inputs.psi?.some.avg10 ?? 0
            $0.fullAvg10 = memory.inputs.psi?.full?.avg10 ?? 0
            $0.memAvailable = memory.inputs.memInfo?.available ?? 0
            $0.workersPss = liveWorkersPSS
            $0.budget = memoryConfiguration.budget ?? 0
            $0.reclaimedCount = UInt32(memory.reclaimedCount)
            $0.reclaimedBytes = memory.reclaimedBytes
            $0.psiSource = memory.psiSource
            $0.reasons = memory.reasons
        }
    }

    /// New readings from the monitor: update the level and respond when it calls for it.
    func applyPressure(_ inputs: PressureInputs, pss: [UUID: UInt64]) async {
        memory.inputs = inputs
        memory.pss = pss
        let before = memory.policy.level
        let (level, now, reasons) = memory.policy.update(inputs, now: .now)
        memory.reasons = reasons
        if level != before {
            logger.notice("memory pressure level changed", metadata: ["from": "\(before)", "to": "\(level)", "reasons": "\(reasons.joined(separator: "; "))"])
            emitBrokerEvent("pressure", "\(before) -> \(level): \(reasons.joined(separator: "; "))")
        }
        // Hysteresis holds the reported level; actions follow what the inputs call for now, so a
        // level held at critical after the budget is met reclaims nothing more.
        guard now > .normal else { return }
        let due = level > before || memory.lastAction.map { .now - $0 >= memoryConfiguration.minimumActionInterval } ?? true
        guard due else { return }
        _ = await respond(to: now, simulated: false, saving: true)
    }

    /// `wmctl pressure simulate`: the same response a real signal gets.
    public func simulatePressure(_ level: PressureLevel, saving: Bool) async -> PressureOutcome {
        emitBrokerEvent("pressure", "simulated \(level)")
        return await respond(to: level, simulated: true, saving: saving)
    }

    /// warning: every background scene is told to trim. critical: background scenes are
    /// reclaimed, least recently used first: down to the budget minus its margin when the
    /// budget is what is exceeded; one per action interval for kernel pressure (the level is
    /// re-read in between); all of them when simulated.
    private func respond(to level: PressureLevel, simulated: Bool, saving: Bool) async -> PressureOutcome {
        memory.lastAction = .now
        var outcome = PressureOutcome(level: level)
        let background = sessions.values
            .filter { $0.state == .background && workers[$0.id] != nil }
            .sorted { $0.lastActiveAt < $1.lastActiveAt }
        if level == .warning {
            for session in background {
                do {
                    let reply = try await command(session.id, .memoryWarning(.with { $0.level = level.wire }),
                                                  timeout: configuration.workerTimeout, doing: "didReceiveMemoryWarning")
                    var freed: UInt64 = 0
                    if case .memoryWarning(let answer)? = reply { freed = answer.freedBytes }
                    outcome.warned.append((session.id, freed))
                    emit(session.id, app: session.appID, "didReceiveMemoryWarning", "level=\(level) freed=\(freed) bytes")
                } catch {
                    logger.warning("memory warning not delivered", metadata: ["session": "\(session.id)", "error": "\(error)"])
                }
            }
            return outcome
        }
        var used = liveWorkersPSS
        let target = memoryConfiguration.budget.map { UInt64(Double($0) * (1 - memoryConfiguration.budgetMargin)) }
        let overBudget = target.map { used > $0 } ?? false
        for session in background {
            if !simulated {
                if overBudget, let target, used <= target { break }
                if !overBudget, !outcome.reclaimed.isEmpty { break }
            }
            let freed = memory.pss[session.id] ?? 0
            let started = ContinuousClock.now
            do {
                let notes = try await reclaimForMemory(session.id, saving: saving)
                let seconds = (ContinuousClock.now - started).seconds
                used = used > freed ? used - freed : 0
                memory.reclaimedCount += 1
                memory.reclaimedBytes += freed
                let detail = "level=\(level) freed=\(freed) bytes took=\(String(format: "%.1f", seconds * 1000)) ms" + (notes.isEmpty ? "" : "; " + notes.joined(separator: "; "))
                outcome.reclaimed.append((session.id, freed, seconds, detail))
                emit(session.id, app: session.appID, "reclaimed", detail)
            } catch {
                logger.warning("reclaim failed", metadata: ["session": "\(session.id)", "error": "\(error)"])
            }
        }
        if let target, used > target, !simulated {
            logger.warning("over the memory budget with no background scene left to reclaim",
                           metadata: ["used": "\(used.mebibytes)", "target": "\(target.mebibytes)"])
        }
        memory.wake?()
        return outcome
    }

    /// The reclaim path with reason `memoryPressure`; without saving (benchmark baseline
    /// only), the process is simply killed, as systemd-oomd or earlyoom would.
    private func reclaimForMemory(_ id: UUID, saving: Bool) async throws -> [String] {
        if saving {
            return try await reclaim(id, reason: .memoryPressure).notes
        }
        return try await withLifecycleLock {
            guard workers[id] != nil, sessions[id]?.state == .background else { return [] }
            await terminate(id, reason: .memoryPressure)
            await persist(id)
            return ["killed without saving"]
        }
    }

    /// Refuses a launch when the foreground alone already exceeds the budget: nothing
    /// else is killed to make room for it.
    func checkRoomForLaunch() throws {
        guard let budget = memoryConfiguration.budget else { return }
        let foreground = sessions.values.filter { $0.state.isForeground }.compactMap { memory.pss[$0.id] }.reduce(0, +)
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
