import ArgumentParser
import Dispatch
import Foundation
import IPCWire

/// Shell completions that ask the running broker: session ids (with their titles where the
/// shell shows descriptions) and app ids. Quietly nothing when no broker answers in time.
enum LiveCompletion {
    static let sessions = CompletionKind.custom { words, _, prefix in
        query(words) { client in
            try await client.allSessions().map(\.id).filter { $0.hasPrefix(prefix.lowercased()) }
        }
    }

    static let apps = CompletionKind.custom { words, _, prefix in
        query(words) { client in
            guard case .apps(let reply) = try await client.request(.apps(.init())) else { return [] }
            return reply.apps.map(\.id).filter { $0.hasPrefix(prefix) }
        }
    }

    /// Runs one short request against the broker named on the command line (or the default),
    /// waiting at most a second: a completion must never hang a shell.
    private static func query(_ words: [String], _ body: @escaping @Sendable (BrokerClient) async throws -> [String]) -> [String] {
        let given = words.firstIndex(of: "--socket").flatMap { $0 + 1 < words.count ? words[$0 + 1] : nil }
        let path = GlobalOptions.socketPath(given: given)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var found: [String] = []
        Task {
            found = (try? await BrokerClient.withConnection(socketPath: path, clientName: "wmctl-completion", timeout: .seconds(1), body)) ?? []
            done.signal()
        }
        _ = done.wait(timeout: .now() + 1.5)
        return found
    }
}
