import Foundation
import GRDB
import Glibc
import IPCWire
import Logging
import Synchronization

/// Durable session state in SQLite (GRDB, WAL): sessions with their scene storage, their
/// committed restoration activities, discards waiting for the next launch of their app, and
/// each app's shared defaults. The file is 0600 in a
/// 0700 directory: restoration data is user data.
///
/// One broker per store: an exclusive `flock` on `<dir>/lock`, taken before SQLite is opened,
/// keeps a second broker from touching anything. A damaged database (failing `quick_check`,
/// not a database, or an empty file where a store was) is moved aside under a timestamped
/// name and a fresh one started, with a warning the broker reports; a symbolic link is refused.
/// A file deleted or replaced while the broker runs is put back from the open database
/// (`StoreFiles`) before the next commit is acknowledged.
public final class SessionStore: Sendable {
    /// The database and its files; the pool changes when they are put back.
    private let files: StoreFiles
    private var pool: DatabasePool { files.pool }
    /// Where every write transaction runs, in the order handed over (`StoreWriter`).
    private let writer: StoreWriter
    public let path: String
    /// The state directory as resolved at start: the broker's pictures and search index go
    /// here too, so one broker writes one place.
    public let directory: String
    /// What went wrong at open and was recovered from (reported by `status` and STATUS=).
    public let warnings: [String]
    /// How many times the store's files were put back at their path during this run.
    public var restorationCount: Int { files.restorationCount }

    public init(directory given: String, logger: Logger = Logger(label: "windowbroker.store")) throws {
        let fm = FileManager.default
        try PrivateFiles.directory(given, purpose: "state directory")
        guard let resolved = realpath(given, nil) else {
            throw BrokerError(.internalError, "cannot resolve \(given) (the state directory): \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: resolved)
        free(resolved)
        self.directory = directory
        let lockDescriptor = try Self.lock(directory: directory)
        path = directory + "/state.sqlite"
        var warnings: [String] = []
        var info = stat()
        if lstat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFLNK {
                close(lockDescriptor)
                throw BrokerError(.permissionDenied, "\(path) is a symbolic link; the broker keeps its store in a real file (move the link away)")
            }
            if info.st_size == 0, let moved = Self.moveAside(path) {
                warnings.append("\(path) was empty (a store was expected); moved aside to \(moved), starting with no sessions")
            }
        }
        if !fm.fileExists(atPath: path) {
            guard fm.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                close(lockDescriptor)
                throw BrokerError(.internalError, "cannot create \(path)")
            }
        }
        try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            // Deleted restoration data (discarded sessions) is overwritten, not left in free pages.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        let pool: DatabasePool
        do {
            pool = try Self.openChecked(path: path, configuration: configuration)
        } catch let damage as StoreDamage {
            guard let moved = Self.moveAside(path) else {
                close(lockDescriptor)
                throw BrokerError(.internalError, "\(path) is damaged (\(damage.detail)) and cannot be moved aside")
            }
            warnings.append("\(path) was damaged (\(damage.detail)); moved aside to \(moved), starting with no sessions")
            _ = fm.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
            pool = try Self.openPool(path: path, configuration: configuration)
        }
        try Self.migrator.migrate(pool)
        self.warnings = warnings
        let files = StoreFiles(directory: directory, path: path, pool: pool, configuration: configuration,
                               lockDescriptor: lockDescriptor, logger: logger)
        self.files = files
        writer = StoreWriter(idle: (StoreFiles.idleCheck, { try? files.verify() }))
        groupCommit = Self.makeGroupCommit(files: files, writer: writer, writes: writes)
    }

    deinit {
        files.stopWatching()
        files.releaseLock()
    }

    /// At the end of a stop: the files are left as they are from now on, even when removed.
    public func stopWatchingFiles() {
        files.stopWatching()
    }

    /// A pool on the store's file, its writer committing at `synchronous = FULL`.
    static func openPool(path: String, configuration: Configuration) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration)
        // GRDB's WAL set-up leaves commits at `synchronous = NORMAL`, where a power loss can
        // undo the last transactions. What the store acknowledges must survive one: FULL
        // syncs the WAL at each commit. Per connection (only the writer commits): the level
        // of the migrations and checkpoints; each of our writes sets its own (`transaction`).
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        return pool
    }

    private struct StoreDamage: Error {
        var detail: String
    }

    /// Opens the pool and runs `PRAGMA quick_check`; damage of any kind is a `StoreDamage`.
    private static func openChecked(path: String, configuration: Configuration) throws -> DatabasePool {
        let pool: DatabasePool
        do {
            pool = try openPool(path: path, configuration: configuration)
            let result = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            if result != ["ok"] { throw StoreDamage(detail: "quick_check: \(result.prefix(3).joined(separator: "; "))") }
        } catch let error as DatabaseError where [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode) {
            throw StoreDamage(detail: error.message ?? "\(error.resultCode)")
        }
        return pool
    }

    /// Renames the file (and its WAL and shared-memory files) to `<name>.damaged-<time>`.
    private static func moveAside(_ path: String) -> String? {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let target = "\(path).damaged-\(stamp)"
        guard rename(path, target) == 0 else { return nil }
        for suffix in ["-wal", "-shm"] { _ = rename(path + suffix, target + suffix) }
        return target
    }

    /// The exclusive lock on the state directory; refuses with the holder's pid.
    static func lock(directory: String) throws(BrokerError) -> Int32 {
        let lockPath = StoreFiles.lockPath(directory)
        // O_NOFOLLOW: a link planted as the lock must not have its target overwritten with our pid.
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP {
                throw BrokerError(.permissionDenied, "\(lockPath) is a symbolic link; the broker's lock is a real file (move the link away)")
            }
            throw BrokerError(.internalError, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? BoundedFile.read(lockPath, limit: 64, what: "the lock", followLinks: false))
                .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "?"
            close(fd)
            throw BrokerError(.requestDenied, "windowbrokerd is already running (pid \(holder.isEmpty ? "?" : holder)) on the store in \(directory)")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        return fd
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: sessions, restoration, pending discards") { db in
            try db.execute(sql: """
                CREATE TABLE session (
                    id TEXT PRIMARY KEY NOT NULL,
                    appID TEXT NOT NULL,
                    configuration TEXT NOT NULL,
                    role TEXT NOT NULL,
                    title TEXT NOT NULL DEFAULT '',
                    createdAt DOUBLE NOT NULL,
                    lastActiveAt DOUBLE NOT NULL,
                    lastDisconnect TEXT,
                    launchCount INTEGER NOT NULL DEFAULT 0,
                    attached INTEGER NOT NULL DEFAULT 0,
                    activationConditions BLOB
                );
                CREATE INDEX session_app ON session(appID);
                CREATE TABLE restorationActivity (
                    sessionID TEXT PRIMARY KEY NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                    activity BLOB NOT NULL,
                    savedAt DOUBLE NOT NULL
                );
                CREATE TABLE pendingDiscard (
                    appID TEXT NOT NULL,
                    sessionID TEXT NOT NULL,
                    discardedAt DOUBLE NOT NULL,
                    PRIMARY KEY (appID, sessionID)
                );
                """)
        }
        migrator.registerMigration("v2: presentation and requesting scene") { db in
            try db.execute(sql: """
                ALTER TABLE session ADD COLUMN presentation TEXT NOT NULL DEFAULT 'standard';
                ALTER TABLE session ADD COLUMN requestedBy TEXT;
                """)
        }
        migrator.registerMigration("v3: quarantined restoration activities") { db in
            try db.execute(sql: """
                CREATE TABLE quarantinedRestoration (
                    sessionID TEXT PRIMARY KEY NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                    activity BLOB NOT NULL,
                    quarantinedAt DOUBLE NOT NULL
                );
                """)
        }
        migrator.registerMigration("v4: scene storage and shared defaults") { db in
            try db.execute(sql: """
                ALTER TABLE session ADD COLUMN storage BLOB;
                CREATE TABLE appDefault (
                    appID TEXT NOT NULL,
                    key TEXT NOT NULL,
                    value BLOB NOT NULL,
                    changedAt DOUBLE NOT NULL,
                    PRIMARY KEY (appID, key)
                );
                """)
        }
        migrator.registerMigration("v5: committed current activities, damaged rows kept aside") { db in
            try db.execute(sql: """
                CREATE TABLE currentActivity (
                    sessionID TEXT PRIMARY KEY NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                    activity BLOB NOT NULL,
                    savedAt DOUBLE NOT NULL
                );
                CREATE TABLE damagedRow (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    sessionID TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                    what TEXT NOT NULL,
                    data BLOB NOT NULL,
                    reason TEXT NOT NULL,
                    foundAt DOUBLE NOT NULL
                );
                """)
        }
        migrator.registerMigration("v6: the workspace (the scenes on screen, the key one)") { db in
            try db.execute(sql: """
                CREATE TABLE workspace (
                    position INTEGER PRIMARY KEY NOT NULL,
                    sessionID TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                    isKey INTEGER NOT NULL
                );
                """)
        }
        return migrator
    }

    /// Every app's shared defaults; a value that cannot be decoded is left out (and logged by the caller).
    public func loadDefaults() async throws -> [AppID: [String: PlistValue]] {
        try await pool.read { db in
            var out: [AppID: [String: PlistValue]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT appID, key, value FROM appDefault") {
                guard let data = row["value"] as Data?, let value = try? PlistValue(serialized: data) else { continue }
                out[row["appID"], default: [:]][row["key"]] = value
            }
            return out
        }
    }

    /// Writes one default of an app (nil deletes it); when this returns, it is on disk.
    public func setDefault(app: AppID, key: String, value: PlistValue?) async throws {
        let blob = value?.serialized()
        try await write { db in
            if let blob {
                try db.execute(sql: """
                    INSERT INTO appDefault (appID, key, value, changedAt) VALUES (?, ?, ?, ?)
                    ON CONFLICT(appID, key) DO UPDATE SET value = excluded.value, changedAt = excluded.changedAt
                    """, arguments: [app, key, blob, Date().timeIntervalSince1970])
            } else {
                try db.execute(sql: "DELETE FROM appDefault WHERE appID = ? AND key = ?", arguments: [app, key])
            }
        }
    }

    /// Sets the activity a scene failed to restore twice aside (taken from `source`, the
    /// newest); the scene then starts without saved state. An older activity in the other slot
    /// goes: it is superseded by the one kept, and it usually carries the same poison.
    public func quarantine(_ id: SessionID, from source: RestorationSource, at date: Date) async throws {
        let key = id.uppercaseText
        let table = source == .current ? "currentActivity" : "restorationActivity"
        try await write { db in
            guard let activity = try Data.fetchOne(db, sql: "SELECT activity FROM \(table) WHERE sessionID = ?", arguments: [key]) else { return }
            try db.execute(sql: "INSERT OR REPLACE INTO quarantinedRestoration (sessionID, activity, quarantinedAt) VALUES (?, ?, ?)",
                           arguments: [key, activity, date.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM restorationActivity WHERE sessionID = ?", arguments: [key])
            try db.execute(sql: "DELETE FROM currentActivity WHERE sessionID = ?", arguments: [key])
        }
    }

    /// Puts the quarantined activity back as the restoration activity, saved at `date`.
    public func restoreQuarantined(_ id: SessionID, at date: Date) async throws {
        let key = id.uppercaseText
        try await write { db in
            guard let activity = try Data.fetchOne(db, sql: "SELECT activity FROM quarantinedRestoration WHERE sessionID = ?", arguments: [key]) else { return }
            try db.execute(sql: "INSERT OR REPLACE INTO restorationActivity (sessionID, activity, savedAt) VALUES (?, ?, ?)",
                           arguments: [key, activity, date.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM quarantinedRestoration WHERE sessionID = ?", arguments: [key])
        }
    }

    /// What `loadAll` found: the sessions, and the stored values it could not read, which are
    /// kept aside (table `damagedRow`, deleted with their session) rather than overwritten.
    public struct Loaded: Sendable {
        public var sessions: [SceneSession]
        /// One line per damaged value found now, and one for those found at earlier starts.
        public var damage: [String]
    }

    /// Every session, without its activities (each is read once, to find damage). Sessions that were attached when the previous
    /// broker stopped come back unattached with reason `brokerStopped`. A stored value that
    /// does not decode is moved to `damagedRow` in the same transaction and reported: the
    /// session comes back with what could be read, and no later save overwrites the original.
    public func loadAll() async throws -> Loaded {
        try await write { db in
            try db.execute(sql: "UPDATE session SET lastDisconnect = ?, attached = 0 WHERE attached = 1",
                           arguments: [DisconnectReason.brokerStopped.description])
            let earlier = try Int.fetchOne(db, sql: "SELECT count(*) FROM damagedRow") ?? 0
            // A cursor, not every row at once: the rows (with their activity blobs) are read one
            // by one into sessions, and the broker's memory never holds both at the start.
            let rows = try Row.fetchCursor(db, sql: "SELECT s.*, \(Self.savedColumns) FROM session s \(Self.savedJoins) ORDER BY s.createdAt")
            var reader = DamageAwareReader()
            var sessions: [SceneSession] = []
            while let row = try rows.next() {
                guard let id = SessionID(row["id"]) else {
                    reader.damage.append("a stored session has an unreadable id '\(row["id"] as String? ?? "?")'; it is left in the store, unused")
                    continue
                }
                var session = SceneSession(
                    id: id, appID: row["appID"], configuration: row["configuration"], role: row["role"],
                    title: row["title"], now: Date(timeIntervalSince1970: row["createdAt"]))
                session.lastActiveAt = Date(timeIntervalSince1970: row["lastActiveAt"])
                session.lastDisconnect = (row["lastDisconnect"] as String?).flatMap(DisconnectReason.init(stored:))
                session.launchCount = row["launchCount"]
                session.presentation = (row["presentation"] as String?).flatMap(Presentation.init(rawValue:)) ?? .standard
                session.requestedBy = (row["requestedBy"] as String?).flatMap(SessionID.init)
                if let data = row["activationConditions"] as Data?,
                   let conditions = try? JSONDecoder().decode(ActivationConditions.self, from: data) {
                    session.activationConditions = conditions
                }
                // Decoded to find what is damaged, then let go: a session without a process
                // keeps its activities in the store only (`SessionDriver.savedActivities`).
                session.saved = reader.savedActivities(row)
                session.releaseSaved()
                session.storage = reader.read(row, "storage", what: "scene storage", table: nil) { data in
                    try PlistValue.dictionary(wire: try Windowbroker_V1_PlistDictionary(serializedBytes: data), path: "storage")
                } ?? [:]
                sessions.append(session)
            }
            try reader.setAside(in: db)
            var damage = reader.damage
            if earlier > 0 {
                damage.append("\(earlier) damaged stored value\(earlier == 1 ? " is" : "s are") kept aside from earlier starts (table damagedRow of the store; discarding the session deletes them)")
            }
            return Loaded(sessions: sessions, damage: damage)
        }
    }

    /// One session's saved activities, read back for a session that let go of them (it had
    /// no process). A stored value that does not decode is set aside as `loadAll` does, and
    /// reported in `damage`.
    /// Read on a reader's queue, beside the writer (a reader waits for no commit), never on the
    /// caller's thread: the session's pages may have left the page cache by the time it runs
    /// again (a reclaim under memory pressure), and the broker's executor must not wait for
    /// the disk. A damaged value, rare, is set aside in a write of its own.
    public func savedActivities(of id: SessionID) async throws -> (saved: SavedActivities, damage: [String]) {
        let key = id.uppercaseText
        let (saved, reader) = try await pool.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: Self.savedActivitiesSQL), arguments: [key]) else {
                throw Broker.noSuchSession(id)
            }
            var reader = DamageAwareReader()
            return (reader.savedActivities(row), reader)
        }
        if !reader.damage.isEmpty { try await write { db in try reader.setAside(in: db) } }
        return (saved, reader.damage)
    }

    /// What the search index holds for each session, for a rebuild: `SavedActivities.searchable`,
    /// its committed current activity, else its restoration activity (none when neither decodes).
    public func searchEntries() async throws -> [(session: SessionID, app: AppID, activity: UserActivity?)] {
        try await pool.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT s.id, s.appID, coalesce(c.activity, r.activity) AS activity FROM session s \(Self.savedJoins)")
            var entries: [(session: SessionID, app: AppID, activity: UserActivity?)] = []
            while let row = try rows.next() {
                guard let id = SessionID(row["id"]) else { continue }
                entries.append((id, row["appID"], (row["activity"] as Data?).flatMap { try? UserActivity(serialized: $0) }))
            }
            return entries
        }
    }

    private static let savedActivitiesSQL = "SELECT s.id, \(savedColumns) FROM session s \(savedJoins) WHERE s.id = ?"

    /// The columns `DamageAwareReader.savedActivities` reads, and the joins that give them.
    private static let savedColumns = """
        r.activity AS restoration, r.savedAt AS restorationSavedAt, c.activity AS current, c.savedAt AS currentSavedAt,
        q.activity AS quarantined, q.quarantinedAt AS quarantinedAt
        """
    private static let savedJoins = """
        LEFT JOIN restorationActivity r ON r.sessionID = s.id LEFT JOIN currentActivity c ON c.sessionID = s.id
        LEFT JOIN quarantinedRestoration q ON q.sessionID = s.id
        """

    /// Decodes stored values; one that does not decode is set aside (`setAside(in:)`, after the
    /// reads: the tables read are not changed under a cursor) and reported in `damage`.
    private struct DamageAwareReader: Sendable {
        var damage: [String] = []
        private var repairs: [(sql: String, arguments: StatementArguments)] = []
        private let now = Date().timeIntervalSince1970

        mutating func read<T>(_ row: Row, _ column: String, what: String, table: String?, _ decode: (Data) throws -> T) -> T? {
            guard let data = row[column] as Data? else { return nil }
            do {
                return try decode(data)
            } catch {
                let key: String = row["id"]
                let reason = (error as? BrokerError)?.message ?? "\(error)"
                repairs.append(("INSERT INTO damagedRow (sessionID, what, data, reason, foundAt) VALUES (?, ?, ?, ?, ?)",
                                [key, what, data, reason, now]))
                if let table {
                    repairs.append(("DELETE FROM \(table) WHERE sessionID = ?", [key]))
                } else {
                    repairs.append(("UPDATE session SET \(column) = NULL WHERE id = ?", [key]))
                }
                damage.append("session \(key.lowercased()): its stored \(what) could not be read (\(reason)); it is kept aside in the table damagedRow of the store, and the scene starts without it")
                return nil
            }
        }

        /// The activities of a row with `savedColumns`.
        mutating func savedActivities(_ row: Row) -> SavedActivities {
            var saved = SavedActivities()
            saved.restoration = read(row, "restoration", what: "restoration activity", table: "restorationActivity") { try UserActivity(serialized: $0) }
            saved.restorationSavedAt = (row["restorationSavedAt"] as Double?).map(Date.init(timeIntervalSince1970:))
            saved.currentActivity = read(row, "current", what: "current activity", table: "currentActivity") { try UserActivity(serialized: $0) }
            saved.currentSavedAt = (row["currentSavedAt"] as Double?).map(Date.init(timeIntervalSince1970:))
            saved.quarantined = read(row, "quarantined", what: "quarantined restoration activity", table: "quarantinedRestoration") { try UserActivity(serialized: $0) }
            saved.quarantinedAt = (row["quarantinedAt"] as Double?).map(Date.init(timeIntervalSince1970:))
            return saved
        }

        func setAside(in db: Database) throws {
            for repair in repairs { try db.execute(sql: repair.sql, arguments: repair.arguments) }
        }
    }

    /// The level the writer's last transaction committed at (`PRAGMA synchronous`: 2 is FULL,
    /// synced before the commit returns; 1 is NORMAL, not synced): for the tests.
    package func commitSynchronousLevel() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Drops SQLite's page caches (they fill again as needed): after the start read every row.
    public func releaseMemory() {
        pool.releaseMemory()
    }

    /// Inserts a new session's record, synced to the disk.
    @discardableResult
    public func insert(_ session: SceneSession) async throws -> Commit {
        try await beginInsert(session, synced: true).committed()
    }

    /// Hands a new session's record to the writer now, before this returns: every write
    /// submitted after it (the session's own among them) commits after it, so nobody has to
    /// wait for its commit to write about the session. With `synced: false` it survives a
    /// crash of the broker once committed, and a power loss once a later synced commit is
    /// done: whoever says the session exists waits for `isOnDisk` (an open answers then).
    public func beginInsert(_ session: SceneSession, synced: Bool = false) -> PendingInsert {
        writes.count.add(1, ordering: .relaxed)
        let (result, outcome) = AsyncThrowingStream<Commit, any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (writes, files) = (self.writes, self.files)
        writer.submit {
            do {
                outcome.yield(try Self.transaction(in: files, synced: synced, counting: writes) { db in
                    try db.executeCached(sql: Self.insertSQL, arguments: Self.arguments(session, attached: false))
                }.commit)
                outcome.finish()
            } catch {
                outcome.finish(throwing: error)
            }
        }
        return PendingInsert(result: result)
    }

    /// A record handed to the writer (`beginInsert`), committed or failed once.
    public struct PendingInsert: Sendable {
        fileprivate let result: AsyncThrowingStream<Commit, any Error>

        /// Its commit, once it is done (the first caller's; it is awaited once).
        public func committed() async throws -> Commit {
            for try await commit in result { return commit }
            throw CancellationError()
        }
    }

    private static let insertSQL = """
        INSERT INTO session (id, appID, configuration, role, title, createdAt, lastActiveAt,
            lastDisconnect, launchCount, attached, activationConditions, presentation, requestedBy, storage)
        VALUES (:id, :appID, :configuration, :role, :title, :createdAt, :lastActiveAt,
            :lastDisconnect, :launchCount, :attached, :activationConditions, :presentation, :requestedBy, :storage)
        """

    /// A transaction's place in the writer's order (the store's commits are numbered as they
    /// happen, from 1 at each start).
    public struct Commit: Comparable, Sendable {
        let number: Int
        public static func < (a: Commit, b: Commit) -> Bool { a.number < b.number }
    }

    /// Whether `commit` is on the disk: it was synced, or a synced commit came after it (a
    /// sync of the write-ahead log takes every frame written before it).
    public func isOnDisk(_ commit: Commit) -> Bool {
        writes.syncedThrough.load(ordering: .acquiring) >= commit.number
    }

    /// Writes the session's metadata and scene storage (not its restoration activity), not
    /// synced to the disk: what it holds that a scene was told is saved (its storage, its
    /// reports) was committed synced when it came (`commitSceneState`), and the rest (its
    /// state, when it was last active, its launch count) is the broker's own record, which a
    /// power loss may leave one step older.
    /// With `synced`, it also brings every earlier commit to the disk (the open of a session
    /// whose insert was not synced and whose scene reported nothing).
    public func update(_ session: SceneSession, attached: Bool, synced: Bool = false) async throws {
        try await groupCommit.submit(synced: synced) { db in
            try db.executeCached(sql: Self.updateSQL, arguments: Self.arguments(session, attached: attached))
        }
    }

    private static let updateSQL = """
        UPDATE session SET configuration = :configuration, role = :role, title = :title,
            lastActiveAt = :lastActiveAt, lastDisconnect = :lastDisconnect, launchCount = :launchCount,
            attached = :attached, activationConditions = :activationConditions,
            presentation = :presentation, requestedBy = :requestedBy, storage = :storage
        WHERE id = :id
        """

    /// Commits a restoration activity; when this returns, it is on disk.
    public func saveRestoration(_ activity: UserActivity, for id: SessionID, at date: Date) async throws {
        let key = id.uppercaseText
        try await write { db in
            try db.executeCached(sql: """
                INSERT INTO restorationActivity (sessionID, activity, savedAt) VALUES (?, ?, ?)
                ON CONFLICT(sessionID) DO UPDATE SET activity = excluded.activity, savedAt = excluded.savedAt
                """, arguments: [key, activity.serialized(), date.timeIntervalSince1970])
        }
    }

    /// Commits what a running scene reported (its metadata, its storage and, when given, its
    /// current activity saved at `date`) in the next group commit: scenes writing at the same
    /// time share one transaction. When this returns, it is on disk; only then is the scene
    /// told the broker took it.
    public func commitSceneState(_ session: SceneSession, attached: Bool, current: UserActivity?, at date: Date) async throws {
        let key = session.id.uppercaseText
        // The activity is encoded in the writer's closure, as the arguments are (`arguments`).
        try await groupCommit.submit { db in
            try db.executeCached(sql: Self.updateSQL, arguments: Self.arguments(session, attached: attached))
            if let blob = current?.serialized() {
                try db.executeCached(sql: """
                    INSERT INTO currentActivity (sessionID, activity, savedAt) VALUES (?, ?, ?)
                    ON CONFLICT(sessionID) DO UPDATE SET activity = excluded.activity, savedAt = excluded.savedAt
                    """, arguments: [key, blob, date.timeIntervalSince1970])
            }
        }
    }

    /// Deletes the session and its restoration data; when `remember` is set, keeps the
    /// discard to deliver at the app's next launch. One transaction.
    public func discard(_ id: SessionID, appID: AppID, remember: Bool) async throws {
        let key = id.uppercaseText
        try await write { db in
            try db.execute(sql: "DELETE FROM session WHERE id = ?", arguments: [key])
            if remember {
                try db.execute(sql: "INSERT OR REPLACE INTO pendingDiscard (appID, sessionID, discardedAt) VALUES (?, ?, ?)",
                               arguments: [appID, key, Date().timeIntervalSince1970])
            }
        }
        // The deleted text must not linger in the WAL either: copy it back and truncate it.
        await checkpoint()
    }

    /// Moves everything from the WAL into the database file and empties the WAL: at a graceful
    /// stop, the store is one self-contained file.
    public func checkpoint() async {
        let files = self.files
        _ = try? await writer.perform { try files.pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) } }
    }

    /// The scenes on screen, least recently used first, and the key one: what a restart puts back.
    public struct Workspace: Sendable, Equatable {
        public var visible: [SessionID]
        public var key: SessionID?

        public init(visible: [SessionID], key: SessionID?) {
            self.visible = visible
            self.key = key
        }
    }

    public func saveWorkspace(_ workspace: Workspace) async throws {
        let rows = workspace.visible.enumerated().map { ($0.offset, $0.element.uppercaseText, $0.element == workspace.key) }
        // Not synced: after a power loss the scenes put back on screen may be those of a
        // moment before, which nothing was promised about.
        // Cached statements: this runs at every focus change, a row per scene on screen.
        try await write(synced: false) { db in
            try db.executeCached(sql: "DELETE FROM workspace", arguments: [])
            for (position, id, isKey) in rows {
                // A session discarded meanwhile is not there to point at.
                try db.executeCached(sql: "INSERT INTO workspace (position, sessionID, isKey) SELECT ?, id, ? FROM session WHERE id = ?",
                                     arguments: [position, isKey, id])
            }
        }
    }

    public func loadWorkspace() async throws -> Workspace {
        try await pool.read { db in
            var workspace = Workspace(visible: [], key: nil)
            for row in try Row.fetchAll(db, sql: "SELECT sessionID, isKey FROM workspace ORDER BY position") {
                guard let id = SessionID(row["sessionID"]) else { continue }
                workspace.visible.append(id)
                if row["isKey"] as Bool { workspace.key = id }
            }
            return workspace
        }
    }

    /// Every app's discards still to deliver, oldest first.
    public func pendingDiscards() async throws -> [AppID: [SessionID]] {
        try await pool.read { db in
            var out: [AppID: [SessionID]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT appID, sessionID FROM pendingDiscard ORDER BY discardedAt") {
                if let id = SessionID(row["sessionID"]) { out[row["appID"], default: []].append(id) }
            }
            return out
        }
    }

    public func removePendingDiscards(_ ids: [SessionID], appID: AppID) async throws {
        guard !ids.isEmpty else { return }
        let keys = ids.map(\.uppercaseText)
        try await write { db in
            for key in keys {
                try db.execute(sql: "DELETE FROM pendingDiscard WHERE appID = ? AND sessionID = ?", arguments: [appID, key])
            }
        }
    }

    /// Write transactions since start: what a flood of scene updates must not multiply.
    public var writeCount: Int { writes.count.load(ordering: .relaxed) }
    /// Commits since the store opened, and the number of the newest synced one.
    public var commitCounts: (all: Int, onDisk: Int) {
        (writes.committed.load(ordering: .acquiring), writes.syncedThrough.load(ordering: .acquiring))
    }
    private let writes = WriteCounter()

    private final class WriteCounter: Sendable {
        let count = Atomic<Int>(0)
        /// Commits so far, and the newest synced one; both changed on the writer only.
        let committed = Atomic<Int>(0)
        let syncedThrough = Atomic<Int>(0)
    }

    private func write<T: Sendable>(synced: Bool = true, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        writes.count.add(1, ordering: .relaxed)
        let (writes, files) = (self.writes, self.files)
        return try await writer.perform {
            try Self.transaction(in: files, synced: synced, counting: writes, body).result
        }
    }

    /// One transaction on the writer, synced to the disk at its commit or not. An unsynced
    /// commit survives a crash of the broker, not a power loss; the next synced commit makes
    /// it durable too, as it syncs the whole write-ahead log. (GRDB's `write`, with the
    /// connection's `synchronous` set for this transaction.) Before it returns, the store's
    /// files are checked to be the ones at their paths, or put back there (`StoreFiles`):
    /// a commit into a deleted file is not acknowledged.
    private static func transaction<T>(
        in files: StoreFiles, synced: Bool, counting writes: WriteCounter, _ body: (Database) throws -> T
    ) throws -> (result: T, commit: Commit) {
        let (result, number) = try files.pool.writeWithoutTransaction { db in
            try db.executeCached(sql: synced ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", arguments: [])
            var result: T?
            try db.inTransaction {
                result = try body(db)
                return .commit
            }
            let number = writes.committed.add(1, ordering: .relaxed).newValue
            if synced { writes.syncedThrough.store(number, ordering: .releasing) }
            return (result!, number)
        }
        // A restored store is a synced copy of everything committed.
        if try files.verify() { writes.syncedThrough.store(number, ordering: .releasing) }
        return (result, Commit(number: number))
    }

    /// Session writes that arrive while a commit is on its way wait for the next one together.
    private let groupCommit: GroupCommit

    private static func makeGroupCommit(files: StoreFiles, writer: StoreWriter, writes: WriteCounter) -> GroupCommit {
        GroupCommit { bodies, synced in
            writes.count.add(1, ordering: .relaxed)
            return try await writer.perform {
                try transaction(in: files, synced: synced, counting: writes) { db in
                    // Each write in its own savepoint: one that fails is rolled back alone.
                    bodies.map { body -> DatabaseError? in
                        do {
                            try db.inSavepoint {
                                try body(db)
                                return .commit
                            }
                            return nil
                        } catch let error as DatabaseError {
                            return error
                        } catch {
                            return DatabaseError(resultCode: .SQLITE_ERROR, message: "\(error)")
                        }
                    }
                }.result
            }
        }
    }

    /// A store failure as users read it: a full disk is `storageFull`, naming the file.
    static func brokerError(_ error: any Error, doing what: String, path: String = "the session store") -> BrokerError {
        if let error = error as? BrokerError { return error }
        if let database = error as? DatabaseError, database.resultCode == .SQLITE_FULL {
            return BrokerError(.storageFull, "could not \(what): the disk holding \(path) is full")
        }
        return BrokerError(.internalError, "could not \(what) in \(path): \(error)")
    }

    /// Activation conditions as stored: a JSON object with the two lists, read back with
    /// `JSONDecoder`. Written by hand: a `JSONEncoder` at every write of a session (its insert,
    /// each report's commit) cost 25,000 instructions, three times an open (`callgrind`).
    static func stored(_ conditions: ActivationConditions) -> Data {
        var json = Array("{\"canActivate\":".utf8)
        json.reserveCapacity(64)
        appendJSON(conditions.canActivate, to: &json)
        json.append(contentsOf: ",\"prefersToActivate\":".utf8)
        appendJSON(conditions.prefersToActivate, to: &json)
        json.append(UInt8(ascii: "}"))
        return Data(json)
    }

    /// A JSON array of strings: quotes, backslashes and control characters escaped, the rest
    /// as its UTF-8.
    private static func appendJSON(_ strings: [String], to json: inout [UInt8]) {
        json.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json.append(UInt8(ascii: "\""))
            for byte in string.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    json.append(contentsOf: [UInt8(ascii: "\\"), byte])
                case 0..<0x20:
                    json.append(contentsOf: "\\u00".utf8)
                    json.append(contentsOf: [hexDigit(byte >> 4), hexDigit(byte & 0xF)])
                default:
                    json.append(byte)
                }
            }
            json.append(UInt8(ascii: "\""))
        }
        json.append(UInt8(ascii: "]"))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// Called inside the writer's closures, so made on its thread: an insert and a scene's first
    /// report come in the middle of an open, whose steps run on the broker's loop.
    private static func arguments(_ session: SceneSession, attached: Bool) -> StatementArguments {
        [
            "id": session.id.uppercaseText,
            "appID": session.appID,
            "configuration": session.configuration,
            "role": session.role,
            "title": session.title,
            "createdAt": session.createdAt.timeIntervalSince1970,
            "lastActiveAt": session.lastActiveAt.timeIntervalSince1970,
            "lastDisconnect": session.lastDisconnect?.description,
            "launchCount": session.launchCount,
            "attached": attached,
            "activationConditions": stored(session.activationConditions),
            "presentation": session.presentation.rawValue,
            "requestedBy": session.requestedBy?.uppercaseText,
            "storage": session.storage.isEmpty ? nil : try? PlistValue.wire(dictionary: session.storage).serializedData(),
        ]
    }
}

/// App ids are stored as their text.
extension AppID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> AppID? {
        String.fromDatabaseValue(dbValue).map { AppID($0) }
    }
}
