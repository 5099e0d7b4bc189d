import Foundation

/// How short memory is. Ordered: normal < warning < critical.
public enum PressureLevel: Int, Sendable, Comparable, CustomStringConvertible {
    case normal = 0
    case warning = 1
    case critical = 2

    public static func < (a: PressureLevel, b: PressureLevel) -> Bool { a.rawValue < b.rawValue }
    public var description: String { ["normal", "warning", "critical"][rawValue] }
}

/// Thresholds, in the spirit of Android's lmkd: warning at 70 ms of `some` stall per second
/// (7 % of wall time), critical at 700 ms of `full` stall per second (70 %) or `some` held
/// above 40 % (avg10 is itself a 10 s average: that is "sustained"). A level is left only once
/// every input is below `exitFraction` of the bar that raised it, for `coolDown`.
public struct PressureThresholds: Sendable, Equatable {
    public var warningSomePercent = 7.0
    public var criticalFullPercent = 70.0
    public var criticalSomePercent = 40.0
    /// Critical below this much MemAvailable; warning below twice it. 0 turns the input off.
    public var memAvailableFloor: UInt64 = 64 << 20
    /// Warning when workers use this fraction of the budget; critical above the budget.
    public var budgetWarningFraction = 0.9
    public var exitFraction = 0.5
    public var coolDown: Duration = .seconds(3)

    public init() {}
}

/// One look at every input.
public struct PressureInputs: Sendable, Equatable {
    public var psi: PSIReading?
    public var memInfo: MemInfo?
    public var workersPSS: UInt64
    public var budget: UInt64?

    public init(psi: PSIReading?, memInfo: MemInfo?, workersPSS: UInt64, budget: UInt64?) {
        self.psi = psi
        self.memInfo = memInfo
        self.workersPSS = workersPSS
        self.budget = budget
    }
}

/// The pure level computation with hysteresis: `(state, inputs, now) -> (state, level, reasons)`.
public struct PressurePolicy: Sendable {
    public var thresholds: PressureThresholds
    public private(set) var level: PressureLevel = .normal
    /// Since when the inputs have been calm enough to step down.
    private var calmSince: ContinuousClock.Instant?

    public init(thresholds: PressureThresholds = PressureThresholds()) {
        self.thresholds = thresholds
    }

    /// The level the inputs alone call for (scale 1), or whether they are below the exit bars
    /// (scale exitFraction), with the reasons that count.
    public func rawLevel(_ inputs: PressureInputs, scale: Double = 1) -> (PressureLevel, [String]) {
        var level = PressureLevel.normal
        var reasons: [String] = []
        func raise(_ to: PressureLevel, _ reason: String) {
            if to > level { level = to }
            reasons.append(reason)
        }
        let t = thresholds
        if let psi = inputs.psi {
            if let full = psi.full, full.avg10 >= t.criticalFullPercent * scale {
                raise(.critical, "PSI full avg10 \(full.avg10)% >= \(t.criticalFullPercent * scale)%")
            }
            if psi.some.avg10 >= t.criticalSomePercent * scale {
                raise(.critical, "PSI some avg10 \(psi.some.avg10)% >= \(t.criticalSomePercent * scale)%")
            } else if psi.some.avg10 >= t.warningSomePercent * scale {
                raise(.warning, "PSI some avg10 \(psi.some.avg10)% >= \(t.warningSomePercent * scale)%")
            }
        }
        if let memInfo = inputs.memInfo, t.memAvailableFloor > 0 {
            // Scaling a floor the other way: calm means well above it.
            let floor = Double(t.memAvailableFloor) / scale
            if Double(memInfo.available) < floor {
                raise(.critical, "MemAvailable \(memInfo.available.mebibytes) < \(UInt64(floor).mebibytes)")
            } else if Double(memInfo.available) < 2 * floor {
                raise(.warning, "MemAvailable \(memInfo.available.mebibytes) < \(UInt64(2 * floor).mebibytes)")
            }
        }
        if let budget = inputs.budget, budget > 0 {
            let used = Double(inputs.workersPSS)
            if used > Double(budget) * scale {
                raise(.critical, "workers use \(inputs.workersPSS.mebibytes) of a \(budget.mebibytes) budget")
            } else if used >= Double(budget) * t.budgetWarningFraction * scale {
                raise(.warning, "workers use \(inputs.workersPSS.mebibytes), \(Int(t.budgetWarningFraction * 100))% of a \(budget.mebibytes) budget")
            }
        }
        return (level, reasons)
    }

    /// Rises at once; steps down one level only after the inputs stayed below the exit bars
    /// for `coolDown`. `raw` is what the inputs alone call for now (what actions follow).
    public mutating func update(_ inputs: PressureInputs, now: ContinuousClock.Instant) -> (level: PressureLevel, raw: PressureLevel, reasons: [String]) {
        let (raw, reasons) = rawLevel(inputs)
        if raw >= level {
            level = raw
            calmSince = nil
            return (level, raw, reasons)
        }
        let (calmLevel, _) = rawLevel(inputs, scale: thresholds.exitFraction)
        guard calmLevel < level else {
            calmSince = nil
            return (level, raw, reasons.isEmpty ? ["holding \(level) until inputs fall below the exit bars"] : reasons)
        }
        if let since = calmSince {
            if now - since >= thresholds.coolDown {
                level = max(raw, PressureLevel(rawValue: level.rawValue - 1) ?? .normal)
                calmSince = level == raw ? nil : now
            }
        } else {
            calmSince = now
        }
        return (level, raw, reasons)
    }
}
