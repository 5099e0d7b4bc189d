/// wb-load: N control clients, each on its own connection, M requests each (a mix of status,
/// sessions, show, ping and search) against a running broker, optionally while W watchers
/// (`--watchers`) hold connections of their own. Prints errors, latency p50/p99 and the
/// broker's RSS before and after (`make load`). Asserts nothing: it measures.
import Foundation
import IPCWire

WireRuntime.runTasksOnEventLoops(loops: 2)

func option(_ name: String, _ fallback: Int) -> Int {
    guard let index = CommandLine.arguments.firstIndex(of: name), index + 1 < CommandLine.arguments.count,
          let value = Int(CommandLine.arguments[index + 1]), value > 0 else { return fallback }
    return value
}
let socket = CommandLine.arguments.firstIndex(of: "--socket").map { CommandLine.arguments[$0 + 1] }
    ?? BrokerClient.defaultSocketPath()
let clients = option("--clients", 100)
let requestsPerClient = option("--requests", 200)
let watcherCount = CommandLine.arguments.contains("--watchers") ? option("--watchers", 0) : 0

func rss(_ pid: Int32) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kb / 1024
}

struct Tally: Sendable {
    var micros: [Double] = []
    var errors: [String: Int] = [:]
}

do {
    let (pid, sessions) = try await BrokerClient.withConnection(socketPath: socket, clientName: "wb-load") { client -> (Int32, [String]) in
        guard case .status(let status) = try await client.request(.status(.init())),
              case .sessions(let list) = try await client.request(.sessions(.init())) else { throw BrokerError(.malformedFrame, "unexpected reply") }
        return (status.pid, list.sessions.map(\.id))
    }
    // Watchers first: they hold their connections (and the broker's descriptors) throughout.
    let watchers = Task {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<watcherCount {
                group.addTask {
                    _ = try? await BrokerClient.withConnection(socketPath: socket, clientName: "wb-load-watch-\(index)") { client in
                        guard case .watchStarted = try await client.request(.watch(.init())) else { return }
                        for await _ in client.events {}
                    }
                }
            }
        }
    }
    if watcherCount > 0 {
        try await Task.sleep(for: .seconds(2))
        print("\(watcherCount) watchers connected")
    }
    let before = rss(pid)
    let clock = ContinuousClock()
    let started = clock.now
    let tally = await withTaskGroup(of: Tally.self) { group -> Tally in
        for client in 0..<clients {
            group.addTask {
                do {
                    return try await BrokerClient.withConnection(socketPath: socket, clientName: "wb-load-\(client)") { connection -> Tally in
                        var tally = Tally()
                        for index in 0..<requestsPerClient {
                            let request: ControlRequest
                            switch (client + index) % 5 {
                            case 0: request = .status(.init())
                            case 1: request = .sessions(.init())
                            case 2: request = .show(.with { $0.sessionID = sessions.isEmpty ? UUID().uuidString : sessions[index % sessions.count] })
                            case 3: request = .ping(.with { $0.payload = Data("load".utf8) })
                            default: request = .search(.with { $0.query = "note*" })
                            }
                            let begin = clock.now
                            do {
                                _ = try await connection.request(request)
                                let elapsed = clock.now - begin
                                tally.micros.append(Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
                            } catch let error as BrokerError {
                                // show of an unknown session is an answer, not a failure
                                if error.code == .unknownSession { continue }
                                tally.errors["\(error.code)", default: 0] += 1
                            }
                        }
                        return tally
                    }
                } catch {
                    return Tally(errors: ["connection: \((error as? BrokerError)?.code.rawValue ?? "\(error)")": 1])
                }
            }
        }
        var all = Tally()
        for await part in group {
            all.micros += part.micros
            all.errors.merge(part.errors, uniquingKeysWith: +)
        }
        return all
    }
    let span = (clock.now - started).components
    let seconds = Double(span.seconds) + Double(span.attoseconds) / 1e18
    let after = rss(pid)
    let sorted = tally.micros.sorted()
    func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
    print(String(format: "%d clients x %d requests: %d answered, %d errors %@", clients, requestsPerClient, sorted.count,
                 tally.errors.values.reduce(0, +), tally.errors.isEmpty ? "" : "\(tally.errors)"))
    print(String(format: "latency p50 %.0f µs, p99 %.0f µs, max %.0f µs; %.0f requests/s", percentile(0.5), percentile(0.99),
                 sorted.last ?? 0, Double(sorted.count) / max(1e-6, seconds)))
    print(String(format: "broker RSS %.1f MiB before, %.1f MiB after", before, after))
    watchers.cancel()
    exit(tally.errors.isEmpty ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("wb-load: \(error)\n".utf8))
    exit(3)
}
