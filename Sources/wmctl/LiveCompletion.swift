import ArgumentParser
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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

    /// The activity types of the app named on the command line (`open APP --activity`), or of
    /// every app.
    static let activityTypes = CompletionKind.custom { words, _, prefix in
        let app = word(after: "open", in: words)
        return query(words) { client in
            guard case .apps(let reply) = try await client.request(.apps(.init())) else { return [] }
            let types = reply.apps.filter { app == nil || $0.id == app }.flatMap(\.activityTypes)
            return Array(Set(types)).sorted().filter { $0.hasPrefix(prefix) }
        }
    }

    /// The shortcuts of the scene a key goes to (the key scene, or `--session`), as `key` takes them.
    static let shortcuts = commands { $0.shortcut }

    /// The ids of the commands of that scene's menu (`menu invoke`).
    static let commandIDs = commands { $0.id }

    private static func commands(_ field: @escaping @Sendable (Windowbroker_V1_MenuCommand) -> String) -> CompletionKind {
        .custom { words, _, prefix in
            let session = word(after: "--session", in: words)
            return query(words) { client in
                guard case .commands(let reply) = try await client.request(.commands(.with { $0.sessionID = session ?? "" })) else { return [] }
                return reply.commands.map(field).filter { !$0.isEmpty && $0.hasPrefix(prefix) }.sorted()
            }
        }
    }

    static let eventNames = CompletionKind.list(WireProtocol.eventNames.sorted())

    /// The actions the app of the session named after `send` declares.
    static let actions = CompletionKind.custom { words, _, prefix in
        let session = word(after: "send", in: words) ?? ""
        return query(words) { client in
            guard case .session(let info) = try await client.request(.show(.with { $0.sessionID = session })),
                  case .apps(let reply) = try await client.request(.apps(.init())) else { return [] }
            return (reply.apps.first { $0.id == info.appID }?.actions ?? []).map(\.name).filter { $0.hasPrefix(prefix) }.sorted()
        }
    }

    /// The keys of the app's shared defaults (`defaults APP get|set|delete KEY`).
    static let defaultsKeys = CompletionKind.custom { words, _, prefix in
        let app = word(after: "defaults", in: words) ?? ""
        return query(words) { client in
            guard case .defaults(let reply) = try await client.request(.defaults(.with { $0.appID = app })) else { return [] }
            return reply.values.entries.map(\.key).filter { $0.hasPrefix(prefix) }.sorted()
        }
    }

    /// The word after the first `word` on the command line, if any.
    private static func word(after word: String, in words: [String]) -> String? {
        guard let index = words.firstIndex(of: word), index + 1 < words.count else { return nil }
        return words[index + 1]
    }

    /// Runs one short request against the broker named on the command line (or the default),
    /// waiting at most a second: a completion must never hang a shell.
    private static func query(_ words: [String], _ body: @escaping @Sendable (BrokerClient) async throws -> [String]) -> [String] {
        let path = BrokerClient.socketPath(given: word(after: "--socket", in: words))
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
