import Foundation
import GRDB
import IPCWire
import Synchronization

/// The searchable-activities index (the Spotlight idea): one entry per session whose latest
/// activity is marked `eligibleForSearch`, built from its title, keywords, the string values
/// of its `userInfo` and its target content identifier. SQLite FTS5 with the `unicode61`
/// tokenizer and diacritics removed, ranked by bm25, with a highlighted snippet.
///
/// It lives in its own file (`search.sqlite`) beside the session store: it is derived data.
/// When it is missing, damaged, left by an unclean stop or asked to (`--rebuild-index`), it is
/// rebuilt from the store; a lost index never costs a session. Removing an entry also merges
/// the index and truncates the WAL, so the text of a closed session is left in no file.
///
/// Being derived, its commits are not forced to disk one by one (WAL with `synchronous =
/// NORMAL`: a lifecycle step no longer waits for an fsync of the index, 0.3 to 0.7 ms here).
/// What a power loss could take instead is covered by a marker file that exists while the
/// broker runs: found at the next start, it means the broker did not stop cleanly, and the
/// index is rebuilt from the store. The same holds when the index's files are deleted or
/// replaced while the broker runs: searches go on from the open index, and the marker stays
/// for the next start to rebuild it.
public final class SearchIndex: Sendable {
    private let queue: DatabaseQueue
    public let path: String
    /// Why the index was (re)built at open, if it was: "missing", "damaged: ...", "asked",
    /// "unclean stop".
    public let rebuildReason: String?
    /// Exists from open to a clean close (`closeCleanly`).
    private let runningMarker: String
    /// The index's files as opened, and whether one has since left its path.
    private let opened: [String: FileIdentity]
    private let filesChanged = Atomic<Bool>(false)

    public struct Hit: Sendable, Equatable {
        public var sessionID: SessionID
        public var appID: AppID
        public var activityType: String
        public var title: String
        public var targetContentIdentifier: String
        public var snippet: String
        /// bm25 relevance, larger is better.
        public var score: Double
    }

    public init(directory: String, rebuild: Bool = false) throws {
        path = directory + "/search.sqlite"
        try PrivateFiles.refuseLink(path, what: "the search index")
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        var reason: String? = rebuild ? "asked" : nil
        let fm = FileManager.default
        if !fm.fileExists(atPath: path) {
            reason = reason ?? "missing"
        }
        runningMarker = path + "-running"
        try PrivateFiles.refuseLink(runningMarker, what: "the search index's marker")
        if fm.fileExists(atPath: runningMarker) {
            reason = reason ?? "unclean stop"
        }
        // On disk before any commit that is not: a power loss after one is seen at the next start.
        try Self.createDurably(runningMarker)
        if rebuild { Self.remove(path) }
        do {
            queue = try Self.openChecked(path: path, configuration: configuration)
        } catch {
            // Derived data: a damaged index is dropped and rebuilt, never repaired by hand.
            Self.remove(path)
            reason = "damaged: \(error)"
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try Self.createSchema(queue)
        }
        try? fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        rebuildReason = reason
        var opened: [String: FileIdentity] = [:]
        for file in [path, path + "-wal", runningMarker] { opened[file] = FileIdentity(path: file) }
        self.opened = opened
    }

    /// Before a write, off the broker's executor: a file of the index that left its path is
    /// told once through `failed`, and the next start rebuilds the index (the marker is kept).
    private func checkFiles(failed: @Sendable (any Error) -> Void) {
        guard !filesChanged.load(ordering: .relaxed) else { return }
        guard opened.contains(where: { FileIdentity(path: $0.key) != $0.value }) else { return }
        filesChanged.store(true, ordering: .relaxed)
        try? Self.createDurably(runningMarker)
        failed(BrokerError(.internalError, "the search index's files in \((path as NSString).deletingLastPathComponent) were deleted or replaced while the broker ran; searches use the open index until the next start, which rebuilds it from the session store"))
    }

    private static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    private static func openChecked(path: String, configuration: Configuration) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try createSchema(queue)
        try queue.read { db in
            let check = try String.fetchAll(db, sql: "PRAGMA quick_check")
            if check != ["ok"] { throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: check.prefix(3).joined(separator: "; ")) }
        }
        // FTS5's own check: the inverted index agrees with the stored text.
        try queue.write { db in try db.execute(sql: "INSERT INTO activitySearch(activitySearch) VALUES('integrity-check')") }
        return queue
    }

    private static func createSchema(_ queue: DatabaseQueue) throws {
        try queue.write { db in
            try db.execute(sql: """
                CREATE VIRTUAL TABLE IF NOT EXISTS activitySearch USING fts5(
                    title, keywords, body, target,
                    sessionID UNINDEXED, appID UNINDEXED, activityType UNINDEXED,
                    tokenize = 'unicode61 remove_diacritics 2'
                )
                """)
        }
    }

    private static func createDurably(_ path: String) throws {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        fsync(fd)
        Glibc.close(fd)
        let directory = Glibc.open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            Glibc.close(directory)
        }
    }

    /// At a clean stop: everything committed is forced into the database file, then the
    /// marker goes, so the next start trusts the index as it is.
    public func closeCleanly() async {
        guard !filesChanged.load(ordering: .relaxed) else {
            try? Self.createDurably(runningMarker)
            return
        }
        do {
            _ = try await queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            try FileManager.default.removeItem(atPath: runningMarker)
        } catch {
            // The marker stays: the next start rebuilds the index, which loses nothing.
        }
    }

    /// Drops SQLite's page cache (it fills again as searches need it).
    public func releaseMemory() {
        queue.releaseMemory()
    }

    /// Puts the session's entry in place of the old one; an activity not marked eligible
    /// removes it (such activities are never indexed).
    ///
    /// Queued, not awaited: the write takes its place behind every index write queued before
    /// it (one serial writer), so a session's entries land in the order they were decided, and
    /// a search or removal asked for later sees it. `failed` hears of a write that did not land.
    public func index(_ activity: UserActivity?, session: SessionID, app: AppID, failed: @escaping @Sendable (any Error) -> Void) {
        let key = session.description
        queue.asyncWrite({ [self] db in
            checkFiles(failed: failed)
            try db.executeCached(sql: "DELETE FROM activitySearch WHERE sessionID = ?", arguments: [key])
            try Self.insert(activity, session: key, app: app, into: db)
        }, completion: { _, result in
            if case .failure(let error) = result { failed(error) }
        })
    }

    /// Merges the index's segments into one, so deleted entries' words are gone from it (a
    /// truncating checkpoint then takes them out of the WAL too).
    private static func merge(_ db: Database) throws {
        try db.execute(sql: "INSERT INTO activitySearch(activitySearch) VALUES('optimize')")
    }

    /// One entry, when the activity may be indexed at all.
    private static func insert(_ activity: UserActivity?, session key: String, app: AppID, into db: Database) throws {
        guard let activity, activity.isEligibleForSearch else { return }
        try db.executeCached(sql: """
            INSERT INTO activitySearch (title, keywords, body, target, sessionID, appID, activityType)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [
                activity.title, activity.keywords.joined(separator: " "), text(of: activity.userInfo),
                activity.targetContentIdentifier ?? "", key, app, activity.activityType,
            ])
    }

    /// Removes a discarded session's entry, then merges the index and empties the WAL: the
    /// deleted words must not survive in old index segments or log frames.
    public func remove(session: SessionID) async throws {
        let key = session.description
        try await queue.write { db in
            try db.execute(sql: "DELETE FROM activitySearch WHERE sessionID = ?", arguments: [key])
            try Self.merge(db)
        }
        try await queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }

    /// Rebuilds every entry from `activities` (each session's latest stored activity) and
    /// drops entries of sessions that no longer exist.
    public func rebuild(_ activities: [(session: SessionID, app: AppID, activity: UserActivity?)]) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM activitySearch")
            for entry in activities {
                try Self.insert(entry.activity, session: entry.session.description, app: entry.app, into: db)
            }
            try Self.merge(db)
        }
        try queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }

    /// Entries of sessions not in `existing` (a discard interrupted by a crash) are removed.
    public func prune(keeping existing: Set<SessionID>) throws -> Int {
        let indexed = try queue.read { db in try String.fetchAll(db, sql: "SELECT sessionID FROM activitySearch") }
        let stale = indexed.filter { SessionID($0).map { !existing.contains($0) } ?? true }
        guard !stale.isEmpty else { return 0 }
        try queue.write { db in
            for key in stale { try db.execute(sql: "DELETE FROM activitySearch WHERE sessionID = ?", arguments: [key]) }
            try Self.merge(db)
        }
        return stale.count
    }

    public var count: Int {
        (try? queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM activitySearch") }) ?? 0
    }

    /// The best `limit` hits for what a person typed (see `SearchQuery`).
    public func search(_ text: String, app: AppID?, limit: Int) async throws(BrokerError) -> [Hit] {
        let match = try SearchQuery.match(text)
        do {
            return try await queue.read { db in
                let rows = try Row.fetchAll(db, sql: """
                    SELECT sessionID, appID, activityType, title, target,
                        snippet(activitySearch, -1, '[', ']', '…', 12) AS snippet,
                        bm25(activitySearch, 10.0, 5.0, 1.0, 2.0) AS rank
                    FROM activitySearch WHERE activitySearch MATCH ? \(app == nil ? "" : "AND appID = ?")
                    ORDER BY rank LIMIT ?
                    """, arguments: app == nil ? [match, limit] : [match, app, limit])
                return rows.compactMap { row in
                    guard let id = SessionID(row["sessionID"]) else { return nil }
                    return Hit(sessionID: id, appID: row["appID"], activityType: row["activityType"], title: row["title"],
                               targetContentIdentifier: row["target"], snippet: row["snippet"], score: -(row["rank"] as Double))
                }
            }
        } catch {
            throw BrokerError(.internalError, "the search index could not answer: \(error)")
        }
    }

    /// The string values in a `userInfo`, nested ones included, one per line.
    static func text(of info: [String: PlistValue]) -> String {
        var out: [String] = []
        func walk(_ value: PlistValue) {
            switch value {
            case .string(let s): out.append(s)
            case .url(let u): out.append(u)
            case .list(let items): items.forEach(walk)
            case .dictionary(let entries): entries.keys.sorted().forEach { walk(entries[$0]!) }
            default: break
            }
        }
        info.keys.sorted().forEach { walk(info[$0]!) }
        return out.joined(separator: "\n")
    }
}

/// Turns what a person typed into an FTS5 query: every word must match (in any column), a
/// word ending in `*` matches as a prefix, and nothing typed is FTS5 syntax (no injection, no
/// syntax errors). Diacritics are removed by the tokenizer on both sides; `ß` and `ss` are
/// treated as the same letters, which the tokenizer does not do by itself.
public enum SearchQuery {
    public static func match(_ text: String) throws(BrokerError) -> String {
        let words = text.split(whereSeparator: { $0.isWhitespace }).map(String.init).prefix(32)
        var terms: [String] = []
        for word in words {
            let prefix = word.hasSuffix("*")
            let bare = word.trimmingCharacters(in: CharacterSet(charactersIn: "*"))
            guard bare.contains(where: { $0.isLetter || $0.isNumber }) else { continue }
            let variants = Self.variants(bare.lowercased()).map { "\"\($0.replacingOccurrences(of: "\"", with: "\"\""))\"" + (prefix ? "*" : "") }
            terms.append(variants.count == 1 ? variants[0] : "(" + variants.joined(separator: " OR ") + ")")
        }
        guard !terms.isEmpty else {
            throw BrokerError(.invalidRequest, "the search has no words to look for")
        }
        return terms.joined(separator: " AND ")
    }

    /// The spellings of a word with `ß` and `ss` exchanged (at most 8).
    static func variants(_ word: String) -> [String] {
        var results: Set<String> = [word]
        results.insert(word.replacingOccurrences(of: "ß", with: "ss"))
        let expanded = word.replacingOccurrences(of: "ß", with: "ss")
        if expanded.contains("ss") {
            results.insert(expanded.replacingOccurrences(of: "ss", with: "ß"))
        }
        return results.sorted().prefix(8).map { $0 }
    }
}
