import Foundation
import Glibc
import IPCWire
import XCTest

/// A seeded, reproducible fuzz of the control socket, run with every `make test`: mutated
/// envelopes (bit flips, truncation, spliced bytes, lying length headers, frames before and
/// after Hello) from 1,500 connections. The broker must answer or close each one, never
/// crash, and keep serving; the seed is in every failure message
/// (`WINDOWBROKER_FUZZ_SEED=N` replays a run).
final class ControlSocketFuzzTests: BrokerTestCase {
    /// SplitMix64: small, fast, and the same sequence for the same seed everywhere.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    private static let seeds: [Envelope] = [
        RawSocket.hello(),
        .with { $0.id = 2; $0.controlRequest = .with { $0.ping = .with { $0.payload = Data("fuzz".utf8) } } },
        .with { $0.id = 3; $0.controlRequest = .with { $0.status = .init() } },
        .with { $0.id = 4; $0.controlRequest = .with { $0.sessions = .with { $0.appID = "notes" } } },
        .with { $0.id = 5; $0.controlRequest = .with { $0.show = .with { $0.sessionID = UUID().uuidString } } },
        .with { $0.id = 6; $0.controlRequest = .with { $0.open = .with { $0.appID = "no-such-app"; $0.activity = .with { $0.activityType = "x"; $0.userInfo = .init() } } } },
        .with { $0.id = 7; $0.controlRequest = .with { $0.watch = .with { $0.events = ["created"] } } },
    ]

    private func mutate(_ bytes: [UInt8], _ random: inout SeededGenerator) -> [UInt8] {
        var out = bytes
        switch Int.random(in: 0..<5, using: &random) {
        case 0:  // flip bits
            for _ in 0..<Int.random(in: 1...8, using: &random) where !out.isEmpty {
                out[Int.random(in: 0..<out.count, using: &random)] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            }
        case 1:  // truncate
            out = Array(out.prefix(Int.random(in: 0...out.count, using: &random)))
        case 2:  // splice random bytes in
            let junk = (0..<Int.random(in: 1...64, using: &random)).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            out.insert(contentsOf: junk, at: Int.random(in: 0...out.count, using: &random))
        case 3:  // random bytes only
            out = (0..<Int.random(in: 0...256, using: &random)).map { _ in UInt8.random(in: .min ... .max, using: &random) }
        default:  // a valid body under a lying length header
            return RawSocket.header(Int.random(in: 0...(2 << 20), using: &random)) + out
        }
        return RawSocket.header(out.count) + out
    }

    func testSeededGarbageNeverCrashesTheBrokerNorStopsItServing() throws {
        let seed = ProcessInfo.processInfo.environment["WINDOWBROKER_FUZZ_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0 ... .max)
        var random = SeededGenerator(state: seed)
        let bodies: [[UInt8]] = try Self.seeds.map { try $0.serializedBytes() }
        let before = try harness.jsonList("sessions").count
        for round in 0..<1_500 {
            let raw = try RawSocket(path: harness.socketPath, receiveTimeout: 2)
            if Bool.random(using: &random) { try raw.greet() }
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                raw.write(mutate(bodies.randomElement(using: &random)!, &random))
            }
            // Our side is done: the broker must answer what it can and close, not wait.
            shutdown(raw.fd, Int32(SHUT_WR))
            while raw.readFrame() != nil {}
            if round % 250 == 249 {
                let status = harness.wmctl("--json", "status")
                XCTAssertEqual(status.code, 0, "seed \(seed), round \(round): the broker stopped serving: \(status.stdout)")
                if status.code != 0 { return }
            }
        }
        XCTAssertEqual(try harness.jsonList("sessions").count, before, "seed \(seed): garbage created sessions")
        XCTAssertTrue(processExists(harness.brokerPID), "seed \(seed): the broker crashed")
        XCTAssertEqual(harness.wmctl("ping").code, 0, "seed \(seed)")
    }
}

/// The libFuzzer corpus (`fuzz/corpus`, grown by `make fuzz`; crashes it finds are added here)
/// replayed through the same code with the normal build: every input still decodes or is refused.
final class FuzzCorpusReplayTests: XCTestCase {
    func testTheFuzzCorpusReplaysWithoutACrash() throws {
        let corpus = BrokerHarness.repository.appendingPathComponent("fuzz/corpus").path
        let inputs = try FileManager.default.contentsOfDirectory(atPath: corpus).sorted().map { corpus + "/" + $0 }
        XCTAssertGreaterThanOrEqual(inputs.count, 10)
        let (code, text) = try runToCompletion(BrokerHarness.binDirectory + "/wire-fuzz", inputs)
        XCTAssertEqual(code, 0, text)
        XCTAssertTrue(text.contains("replayed \(inputs.count) input(s)"), text)
    }
}
