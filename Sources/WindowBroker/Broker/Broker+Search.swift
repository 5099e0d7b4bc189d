import Foundation
import IPCWire
import Logging

/// What the broker does with searchable activities: each session's driver keeps its index
/// entry in step with the session's latest activity (`SessionDriver.reindex`); the broker
/// removes it with the session and answers searches.
extension Broker {
    /// A discarded session leaves the index at once, and its words leave the file.
    func unindex(_ id: SessionID) async {
        do {
            try await searchIndex?.remove(session: id)
        } catch {
            logger.warning("cannot remove a session from the search index", metadata: ["session": "\(id)", "error": "\(error)"])
        }
    }

    public func search(_ text: String, app: AppID?, limit: Int) async throws(BrokerError) -> SearchOutcome {
        guard let searchIndex else {
            throw BrokerError(.internalError, "the search index is unavailable (see `wmctl status` warnings); restart with --rebuild-index")
        }
        // 200 hits with their titles and snippets fit a frame.
        guard (1...200).contains(limit) else { throw BrokerError(.invalidRequest, "the limit must be between 1 and 200") }
        if let app { _ = try apps.manifest(app) }
        // Control characters are nothing a person searches for; NUL would cut the query short.
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
            throw BrokerError(.invalidRequest, "the query contains a control character (NUL, newline, ...); search for words")
        }
        let hits = try await searchIndex.search(text, app: app, limit: limit)
        var outcome = SearchOutcome(hits: [], unavailable: [])
        for hit in hits where drivers[hit.sessionID] != nil {
            if apps.manifests[hit.appID] == nil { outcome.unavailable.append(hit) } else { outcome.hits.append(hit) }
        }
        return outcome
    }
}

/// What a search found.
public struct SearchOutcome: Sendable {
    public var hits: [SearchIndex.Hit]
    /// Hits in apps that are not installed any more: reported, not offered.
    public var unavailable: [SearchIndex.Hit]
}

extension SearchIndex {
    /// Opens the index; when it was missing, damaged, left by an unclean stop or asked to,
    /// rebuilds it from the store, each session by the activity a reindex would use (its
    /// committed current one, else its restoration activity). A damaged one is a warning; an
    /// index that cannot be opened at all leaves search unavailable, never the broker.
    static func open(
        directory: String, rebuild: Bool, sessions: [SceneSession],
        entries: () async throws -> [(session: SessionID, app: AppID, activity: UserActivity?)], logger: Logger
    ) async -> (SearchIndex?, [String]) {
        let index: SearchIndex
        do {
            index = try SearchIndex(directory: directory, rebuild: rebuild)
        } catch {
            logger.error("cannot open the search index; search is unavailable", metadata: ["error": "\(error)"])
            return (nil, ["the search index \(directory)/search.sqlite cannot be opened (\(error)); search is unavailable"])
        }
        var warnings: [String] = []
        do {
            if let reason = index.rebuildReason {
                try index.rebuild(try await entries())
                logger.notice("search index rebuilt", metadata: ["reason": "\(reason)", "entries": "\(index.count)"])
                if reason.hasPrefix("damaged") {
                    warnings.append("the search index was \(reason); rebuilt from \(index.count) stored activities")
                }
            } else {
                let pruned = try index.prune(keeping: Set(sessions.map(\.id)))
                if pruned > 0 { logger.notice("search index: removed entries of discarded sessions", metadata: ["entries": "\(pruned)"]) }
            }
        } catch {
            logger.error("cannot rebuild the search index", metadata: ["error": "\(error)"])
            warnings.append("the search index could not be rebuilt (\(error)); search may miss sessions")
        }
        return (index, warnings)
    }
}
