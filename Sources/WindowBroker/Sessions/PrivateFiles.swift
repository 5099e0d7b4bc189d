import Foundation
import Glibc
import IPCWire

/// The broker's own directories and files are private to the user, and never someone else's
/// by way of a link: a directory that is shared (world-writable or sticky, like /tmp) is refused
/// rather than chmod'ed, and a state file that is a symbolic link is refused rather than followed.
enum PrivateFiles {
    /// Creates `path` 0700, or takes an existing directory of this user (tightened to 0700).
    /// With `makingParents` false, only `path` itself is made: its parent must be there.
    static func directory(_ path: String, purpose: String, makingParents: Bool = true) throws(BrokerError) {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw BrokerError(.permissionDenied, "\(path) (the \(purpose)) is not a directory\((info.st_mode & S_IFMT) == S_IFLNK ? " but a symbolic link" : ""); give a directory of your own")
            }
            let mode = info.st_mode & 0o7777
            guard info.st_uid == getuid(), mode & 0o1002 == 0 else {
                throw BrokerError(.permissionDenied, "\(path) (the \(purpose)) is shared (owner uid \(info.st_uid), mode \(String(mode, radix: 8))); the broker keeps user data only in a private directory: give one of your own, e.g. a subdirectory")
            }
            if mode != 0o700 { chmod(path, 0o700) }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: makingParents, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BrokerError(.internalError, "cannot create \(path) (the \(purpose)): \(error.localizedDescription)")
        }
    }

    /// Refuses a path that is a symbolic link (a missing file is fine).
    static func refuseLink(_ path: String, what: String) throws(BrokerError) {
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK {
            throw BrokerError(.permissionDenied, "\(path) (\(what)) is a symbolic link; the broker keeps it in a real file (move the link away)")
        }
    }
}
