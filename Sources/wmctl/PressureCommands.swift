import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

struct Pressure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pressure",
        abstract: "Memory pressure: the level, its inputs, and what reclaim has done.",
        subcommands: [PressureShow.self, PressureSimulate.self],
        defaultSubcommand: PressureShow.self)
}

extension Output {
    /// `wmctl pressure --json` (docs/schema/pressure.schema.json).
    static func pressure(_ p: Windowbroker_V1_PressureReply) -> PlistValue {
        .dictionary([
            "level": .string(pressureName(p.level)),
            "psi": .dictionary(["someAvg10": .real(p.someAvg10), "fullAvg10": .real(p.fullAvg10), "source": .string(p.psiSource)]),
            "memAvailable": .integer(Int64(p.memAvailable)),
            "workersPss": .integer(Int64(p.workersPss)),
            // A number like every other size: 0 means no budget.
            "budget": .integer(Int64(p.budget)),
            "reclaimed": .dictionary(["count": .integer(Int64(p.reclaimedCount)), "bytes": .integer(Int64(p.reclaimedBytes))]),
            "reasons": .list(p.reasons.map { .string($0) }),
            "samples": .integer(Int64(p.samples)),
        ])
    }

    /// `wmctl status --json` (docs/schema/status.schema.json).
    static func status(_ status: Windowbroker_V1_StatusReply) -> PlistValue {
        .dictionary([
            "version": .string(status.version),
            "pid": .integer(Int64(status.pid)),
            "uptimeSeconds": .real((status.uptimeSeconds * 1000).rounded() / 1000),
            "sessions": .integer(Int64(status.sessions)),
            "workers": .integer(Int64(status.workers)),
            "pressure": .string(pressureName(status.pressureLevel)),
            "reclaimed": .integer(Int64(status.reclaimedCount)),
            "prewarmed": .dictionary(status.prewarmed.mapValues { .integer(Int64($0)) }),
            "zygotes": .dictionary(status.zygotes.mapValues { .integer(Int64($0)) }),
            "warnings": .list(status.warnings.map { .string($0) }),
            "storeWrites": .integer(Int64(status.storeWrites)),
            "updatesPosted": .integer(Int64(status.updatesPosted)),
            "updatesDropped": .integer(Int64(status.updatesDropped)),
        ])
    }

    static func pressureName(_ level: Windowbroker_V1_PressureLevel) -> String {
        switch level {
        case .warning: "warning"
        case .critical: "critical"
        default: "normal"
        }
    }
}

struct PressureShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "The current level and its inputs.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let global = self.global
        try await global.withBroker { client in
            guard case .pressure(let p) = try await client.request(.pressure(.init())) else { throw BrokerError.unexpectedReply }
            global.emit(Output.pressure(p)) {
                var lines = [
                    "level: \(Output.pressureName(p.level))" + (p.reasons.isEmpty ? "" : " (\(p.reasons.joined(separator: "; ")))"),
                    "psi: some avg10 \(p.someAvg10)%, full avg10 \(p.fullAvg10)% (\(p.psiSource))",
                    "MemAvailable: \(Output.size(p.memAvailable))",
                    "workers PSS: \(Output.size(p.workersPss))" + (p.budget == 0 ? " (no budget)" : " of a \(Output.size(p.budget)) budget"),
                ]
                lines.append("reclaimed: \(p.reclaimedCount) scenes, \(Output.size(p.reclaimedBytes))")
                return lines.joined(separator: "\n")
            }
        }
    }
}

struct PressureSimulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run the response to a memory warning or critical pressure now, as a real signal would.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "warning or critical.", completion: .list(["warning", "critical"])) var level: String
    @Flag(name: .customLong("skip-save"), help: "Benchmark baseline only: kill background scenes without saving their state first.")
    var skipSave = false

    func validate() throws {
        guard level == "warning" || level == "critical" else { throw ValidationError("simulate warning or critical, not '\(level)'") }
    }

    func run() async throws {
        let global = self.global
        let request = ControlRequest.simulatePressure(.with {
            $0.level = level == "critical" ? .critical : .warning
            $0.skipSave = skipSave
        })
        try await global.withBroker { client in
            guard case .pressureResponse(let r) = try await client.request(request, timeout: .seconds(600)) else { throw BrokerError.unexpectedReply }
            global.emit(.dictionary([
                "level": .string(Output.pressureName(r.level)),
                "warned": .list(r.warned.map { .dictionary(["session": .string($0.sessionID), "freedBytes": .integer(Int64($0.freedBytes))]) }),
                "reclaimed": .list(r.reclaimed.map {
                    .dictionary(["session": .string($0.sessionID), "freedBytes": .integer(Int64($0.freedBytes)),
                                 "seconds": .real($0.seconds), "startedAt": .string(Output.iso($0.startedAt)),
                                 "detail": .string($0.detail)])
                }),
            ])) {
                var lines = ["simulated \(Output.pressureName(r.level)): \(r.warned.count) warned, \(r.reclaimed.count) reclaimed"]
                lines += r.warned.map { "  warned \($0.sessionID): freed \(Output.size($0.freedBytes))" }
                lines += r.reclaimed.map { "  reclaimed \($0.sessionID): \($0.detail)" }
                return lines.joined(separator: "\n")
            }
        }
    }
}
