import Foundation
import IPCWire
import Logging
import ServiceLifecycle

/// Where the memory inputs come from and how often they are read.
public struct MemoryConfiguration: Sendable {
    /// Total PSS all workers may use; nil: no budget.
    public var budget: UInt64?
    /// Reclaim under a budget stops at budget minus this fraction of it.
    public var budgetMargin = 0.1
    public var psiPath = "/proc/pressure/memory"
    public var memInfoPath = "/proc/meminfo"
    public var sampleInterval: Duration = .seconds(1)
    /// At most one warning round or reclaim round per this interval at an unchanged level.
    public var minimumActionInterval: Duration = .seconds(2)
    public var thresholds = PressureThresholds()
    /// The PSI trigger's stall and window (warning threshold: 70 ms per 1 s).
    public var triggerStall: Duration = .milliseconds(70)
    public var triggerWindow: Duration = .seconds(1)

    public init() {}
}

/// Samples PSI, MemAvailable and every worker's PSS, off the broker's executor, and hands the
/// readings to the broker, which owns the level and decides. A PSI trigger (when the kernel
/// allows it) or a launch (0.1 s after it, `PressureResponder.launched`) wakes it before the
/// next interval.
public struct MemoryMonitor: Service {
    let broker: Broker
    let configuration: MemoryConfiguration
    let logger: Logger

    public init(broker: Broker, logger: Logger) {
        self.broker = broker
        self.configuration = broker.memoryConfiguration
        self.logger = logger
    }

    /// Watches until the group stops.
    public func run() async throws {
        await cancelWhenGracefulShutdown { await monitor() }
    }

    func monitor() async {
        // Each wake-up says which workers it wants read; a wake-up that replaced another in the
        // buffer cannot hide an interval's reading: one is taken whenever the last is due.
        let (wakeups, wake) = AsyncStream.makeStream(of: SampleScope.self, bufferingPolicy: .bufferingNewest(1))
        let trigger = PSITrigger.start(
            path: configuration.psiPath, stall: configuration.triggerStall, window: configuration.triggerWindow
        ) { wake.yield(.changed) }
        defer { trigger?.stop() }
        let source = trigger.map { "trigger '\($0.spec)' on \(configuration.psiPath)" } ?? "poll \(configuration.psiPath)"
        logger.info("memory monitor started", metadata: [
            "psi": "\(source)", "budget": "\(configuration.budget.map { $0.mebibytes } ?? "none")",
            "interval": "\(configuration.sampleInterval)",
        ])
        await broker.attachMemoryMonitor(source: source) { wake.yield($0) }
        wake.yield(.changed)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // The interval tick shares the wake-up stream with the trigger and launches.
                while !Task.isCancelled {
                    try? await WireRuntime.sleep(for: configuration.sampleInterval)
                    wake.yield(.changed)
                }
            }
            group.addTask {
                // Idle workers' readings stand for up to 30 intervals (`PSSSampler`); under
                // pressure every reading is fresh.
                var sampler = PSSSampler(maxAge: configuration.sampleInterval * 30)
                var calm = false
                var lastChecked: ContinuousClock.Instant?
                for await asked in wakeups {
                    let now = ContinuousClock.now
                    let scope: SampleScope
                    if !calm {
                        scope = .everything
                    } else if asked == .newcomers, let last = lastChecked, now - last < configuration.sampleInterval {
                        scope = .newcomers
                    } else {
                        scope = .changed
                    }
                    if scope != .newcomers { lastChecked = now }
                    let pids = await broker.workerPIDs()
                    guard let (readings, updated) = try? await OffLoop.run({ [sampler] in
                        var sampler = sampler
                        let readings = sample(pids, with: &sampler, scope: scope)
                        return (readings, sampler)
                    }) else { continue }
                    sampler = updated
                    calm = await broker.applyPressure(readings.inputs, pss: readings.pss) == .normal
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    func sample(_ pids: [SessionID: pid_t], with sampler: inout PSSSampler, scope: SampleScope) -> (inputs: PressureInputs, pss: [SessionID: UInt64]) {
        let pss = sampler.sample(pids, now: .now, scope: scope)
        let psi = ProcFile.read(configuration.psiPath).flatMap(PSIReading.parse)
        let memInfo = ProcFile.read(configuration.memInfoPath).flatMap(MemInfo.parse)
        return (PressureInputs(psi: psi, memInfo: memInfo, workersPSS: pss.values.reduce(0, +), budget: configuration.budget), pss)
    }
}
