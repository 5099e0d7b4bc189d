import Foundation
import GRDB
import Glibc
import IPCWire
import Logging
import Synchronization

/// The session store's database and the files it was opened on. SQLite keeps writing into the
/// files it has open: one deleted or replaced at its path (`rm state.sqlite`, a restore of an
/// old copy, a cleaner) would take every commit since with it at the next start, while the
/// broker went on acknowledging them. `verify` notices (each file's device and inode against
/// the path's) and brings the live data back at the path with SQLite's online backup, from
/// the connection that still has it, then reopens there.
///
/// Verified on the store's writer thread only: after every commit, before it is acknowledged,
/// and whenever the writer is idle for `StoreFiles.idleCheck`.
final class StoreFiles: Sendable {
    /// The directory as resolved once at start: every file the broker keeps is in this one
    /// place, whatever happens later to a symbolic link above it.
    let directory: String
    let path: String
    private let configuration: Configuration
    private let logger: Logger
    private let current: Mutex<DatabasePool>
    private let opened: Mutex<Opened>
    /// Restorations done so far (for the tests and `status`).
    private let restorations = Atomic<Int>(0)
    /// Set once the store is closed: its files are nobody's to put back any more.
    private let closed = Atomic<Bool>(false)

    /// How often an idle writer looks at the files.
    static let idleCheck: TimeInterval = 1

    /// The database, reopened after a restoration: read it at each use, never keep it.
    var pool: DatabasePool { current.withLock { $0 } }
    var restorationCount: Int { restorations.load(ordering: .relaxed) }

    /// What was opened, by path: the store, its WAL and shared memory, the lock, the directory.
    private struct Opened {
        var identities: [String: FileIdentity]
        var lockDescriptor: Int32
    }

    init(directory: String, path: String, pool: DatabasePool, configuration: Configuration, lockDescriptor: Int32, logger: Logger) {
        self.directory = directory
        self.path = path
        self.configuration = configuration
        self.logger = logger
        current = Mutex(pool)
        opened = Mutex(Opened(identities: Self.identities(directory: directory, path: path), lockDescriptor: lockDescriptor))
    }

    /// The broker has stopped: nothing is put back from now on (a directory removed after the
    /// stop stays removed). The lock is kept until the store goes (`releaseLock`).
    func stopWatching() {
        closed.store(true, ordering: .releasing)
    }

    /// Lets go of the lock: the store is gone.
    func releaseLock() {
        opened.withLock { opened in
            if opened.lockDescriptor >= 0 { close(opened.lockDescriptor) }
            opened.lockDescriptor = -1
        }
    }

    static func lockPath(_ directory: String) -> String { directory + "/lock" }
    private static func watched(directory: String, path: String) -> [String] {
        [directory, path, path + "-wal", path + "-shm", lockPath(directory)]
    }

    private static func identities(directory: String, path: String) -> [String: FileIdentity] {
        var out: [String: FileIdentity] = [:]
        for file in watched(directory: directory, path: path) { out[file] = FileIdentity(path: file) }
        return out
    }

    /// Whether the files had to be put back; throws when a file is no longer the one at its
    /// path and it cannot be put back: the commit just made is then not acknowledged, as it
    /// would not survive a restart.
    @discardableResult
    func verify() throws(BrokerError) -> Bool {
        guard !closed.load(ordering: .acquiring) else { return false }
        let changes = opened.withLock { opened in
            opened.identities.compactMap { file, identity -> String? in
                switch FileIdentity(path: file) {
                case nil: "\(file) was deleted"
                case let now? where now != identity: "\(file) was replaced by another file"
                default: nil
                }
            }.sorted()
        }
        guard !changes.isEmpty else { return false }
        logger.error("the session store's files changed under the broker; putting the store back at its path from the open database", metadata: [
            "changes": "\(changes.joined(separator: "; "))", "store": "\(path)",
        ])
        do {
            try restore()
        } catch {
            logger.critical("the session store could not be put back at its path; what it acknowledges from now on is lost at the next start", metadata: [
                "store": "\(path)", "error": "\(error)",
            ])
            throw BrokerError(.internalError, "the session store's file \(path) was deleted or replaced and could not be put back (\(error)); nothing more is written until it can (see the broker's log)")
        }
        restorations.add(1, ordering: .relaxed)
        logger.error("the session store is back at its path, with everything it held", metadata: ["store": "\(path)"])
        return true
    }

    private func restore() throws {
        // The directory is made again, not the tree above it: a parent that went too (a
        // removed home, a test's temporary tree) is not the store's to bring back.
        try PrivateFiles.directory(directory, purpose: "state directory", makingParents: false)
        try opened.withLock { opened in
            let lock = Self.lockPath(directory)
            if FileIdentity(path: lock) != opened.identities[lock] {
                // The lock went with the directory: another broker could start on this store.
                let fd = try SessionStore.lock(directory: directory)
                if opened.lockDescriptor >= 0 { close(opened.lockDescriptor) }
                opened.lockDescriptor = fd
            }
        }
        let copy = path + ".restoring"
        unlink(copy)
        let source = pool
        do {
            let target = try DatabaseQueue(path: copy)
            try source.writeWithoutTransaction { db in
                try target.writeWithoutTransaction { try db.backup(to: $0) }
            }
            try target.close()
            chmod(copy, 0o600)
            try Self.sync(copy)
        } catch {
            unlink(copy)
            throw error
        }
        // Closed before anything is put at the paths: SQLite's last connection to a file deletes
        // the WAL and shared memory beside it by name, which would be the new ones.
        try source.close()
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let known = opened.withLock { $0.identities }
        for file in [path, path + "-wal", path + "-shm"] {
            guard let now = FileIdentity(path: file) else { continue }
            if now == known[file] {
                if file != path { unlink(file) }
            } else {
                // Someone else's file: kept under another name, never overwritten.
                let aside = "\(file).replaced-\(stamp)"
                if rename(file, aside) == 0 {
                    logger.error("a file found at the store's path was moved aside", metadata: ["file": "\(file)", "movedTo": "\(aside)"])
                }
            }
        }
        guard rename(copy, path) == 0 else {
            throw BrokerError(.internalError, "cannot move \(copy) to \(path): \(String(cString: strerror(errno)))")
        }
        try Self.sync(directory)
        let reopened = try SessionStore.openPool(path: path, configuration: configuration)
        current.withLock { $0 = reopened }
        opened.withLock { $0.identities = Self.identities(directory: directory, path: path) }
    }

    private static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BrokerError(.internalError, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw BrokerError(.internalError, "cannot sync \(path): \(String(cString: strerror(errno)))") }
    }
}

/// A file as the kernel knows it, whatever its name: the same device and inode is the same file.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
