import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find sessions by the content of their activities (title, keywords, text, target).",
        discussion: """
            Every word must match; a word ending in * matches as a prefix (pass*). Accents do not
            matter (cafe finds café) and ß matches ss. Only activities their scene marked
            eligibleForSearch are found. `wmctl activate SESSION` reopens a hit, restored.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "What to look for.") var query: [String]
    @Option(help: "Only sessions of this app.") var app: String?
    @Option(help: "At most this many hits (1 to 200).") var limit = 20
    @Option(help: "Run the search this many times and print its latency instead of the hits (a benchmark).")
    var repeatCount: Int?

    func validate() throws {
        guard !query.isEmpty else { throw ValidationError("say what to search for") }
        guard (1...200).contains(limit) else { throw ValidationError("--limit must be between 1 and 200") }
        if let repeatCount, repeatCount < 1 { throw ValidationError("--repeat-count must be at least 1") }
    }

    func run() async throws {
        let global = self.global
        let request = ControlRequest.search(.with {
            $0.query = query.joined(separator: " ")
            $0.appID = app ?? ""
            $0.limit = UInt32(limit)
        })
        let repeatCount = self.repeatCount
        try await global.withBroker { client in
            if let repeatCount {
                var latency = LatencySamples(expected: repeatCount)
                var found = 0
                for _ in 0..<repeatCount {
                    guard case .search(let reply) = try await latency.time({ try await client.request(request) }) else { throw BrokerError.unexpectedReply }
                    found = reply.hits.count
                }
                let figures = latency.summary
                global.emit(.dictionary([
                    "count": .integer(Int64(repeatCount)), "hits": .integer(Int64(found)),
                    "p50Micros": .real(figures.p50.rounded()), "p99Micros": .real(figures.p99.rounded()),
                ])) {
                    "\(repeatCount) searches (\(found) hits each): p50 \(Output.latency(micros: figures.p50)), p99 \(Output.latency(micros: figures.p99))"
                }
                return
            }
            guard case .search(let reply) = try await client.request(request) else { throw BrokerError.unexpectedReply }
            if !reply.unavailable.isEmpty {
                let apps = Set(reply.unavailable.map(\.appID)).sorted().joined(separator: ", ")
                Output.error("wmctl: \(reply.unavailable.count) more hit(s) in apps no longer installed (\(apps)); they cannot be opened\n")
            }
            global.emit(.list(reply.hits.enumerated().map { index, hit in
                .dictionary([
                    "rank": .integer(Int64(index + 1)),
                    "session": .string(hit.sessionID),
                    "app": .string(hit.appID),
                    "title": .string(hit.title),
                    "snippet": .string(hit.snippet),
                    "activityType": .string(hit.activityType),
                    "targetContentIdentifier": hit.targetContentIdentifier.isEmpty ? .null : .string(hit.targetContentIdentifier),
                    "score": .real(hit.score),
                ])
            })) {
                reply.hits.isEmpty ? "no matches" : Output.table(["#", "SESSION", "APP", "TITLE", "SNIPPET"], reply.hits.enumerated().map { index, hit in
                    ["\(index + 1)", String(hit.sessionID.prefix(8)), hit.appID, Output.truncate(hit.title, toWidth: 30), hit.snippet.replacing("\n", with: " ")]
                }, flexible: 4)
            }
            // No match is status 1, as grep's.
            if reply.hits.isEmpty { throw CLIExit(code: 1) }
        }
    }
}
