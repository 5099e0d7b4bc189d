import Foundation
import IPCWire

/// The broker's face for memory: the monitor's readings go to the `PressureResponder`, and
/// `pressure`, `status` and `pressure simulate` read it. The broker is the responder's host.
extension Broker: MemoryHost {
    var sessions: [SceneSession] { Array(allSessions) }

    func hasProcess(_ id: SessionID) -> Bool { drivers[id]?.worker != nil }

    func emptyPrewarmPools() async { await processes.pools.drain(reason: .memoryPressure, in: self) }

    func refillPrewarmPools() { processes.pools.refill(in: self) }

    func launchReadingTaken() {
        memory.launchReadingDue = false
        memory.wake?(.newcomers)
    }

    func attachMemoryMonitor(source: String, wake: @escaping @Sendable (SampleScope) -> Void) {
        memory.psiSource = source
        memory.wake = wake
    }

    func workerPIDs() -> [SessionID: pid_t] {
        Dictionary(uniqueKeysWithValues: drivers.values.compactMap { driver in driver.worker.map { (driver.id, $0.pid) } })
    }

    /// New readings from the monitor: the responder updates the level and acts when it calls
    /// for it. Returns the level, after any response.
    func applyPressure(_ inputs: PressureInputs, pss: [SessionID: UInt64]) async -> PressureLevel {
        await memory.apply(inputs, pss: pss, in: self)
        return memory.level
    }

    /// `wmctl pressure simulate`: the same response a real signal gets.
    public func simulatePressure(_ level: PressureLevel, saving: Bool) async -> PressureOutcome {
        await memory.simulate(level, saving: saving, in: self)
    }

    /// The memory picture `wmctl pressure` and `status` show.
    public func pressureReport() -> PressureReport {
        memory.report(in: self)
    }

    /// didReceiveMemoryWarning for one background scene; what it says it freed.
    func warn(_ id: SessionID, level: PressureLevel) async -> UInt64? {
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
    func reclaimForMemory(_ id: SessionID, level: PressureLevel, saving: Bool) async -> ReclaimRecord? {
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

    /// Refuses a launch when the foreground alone already exceeds the budget.
    func checkRoomForLaunch() throws {
        try memory.checkRoomForLaunch(in: self)
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
