import CLinuxShim
import Foundation
import Glibc
import IPCWire

/// What starting a child of the broker (a worker, the system UI) takes, in one place: pipes
/// whose ends survive only where they are handed over, and the spawn itself, off the event
/// loops, with one descriptor inherited as fd 3.
enum ChildProcess {
    /// A pipe whose ends both close on exec (the spawn hands the write end over explicitly),
    /// the write end kept above the child's descriptors 0 to 3. `purpose` completes "cannot
    /// create a pipe for …" in the error.
    static func pipe(for purpose: String) throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else {
            throw BrokerError(.resourceExhausted, "cannot create a pipe for \(purpose): \(String(cString: strerror(errno)))")
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], aboveChildDescriptors(fds[1]))
    }

    /// A connected stream socket pair whose ends both close on exec: the parent keeps `ours`,
    /// the child gets `theirs` (kept above the child's descriptors 0 to 3) handed over
    /// explicitly. `purpose` completes "cannot create a socket pair for …" in the error.
    static func socketPair(for purpose: String) throws(BrokerError) -> (ours: Int32, theirs: Int32) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, wb_sock_stream() | wb_sock_cloexec(), 0, &pair) == 0 else {
            throw BrokerError(.resourceExhausted, "cannot create a socket pair for \(purpose): \(String(cString: strerror(errno)))")
        }
        return (pair[0], aboveChildDescriptors(pair[1]))
    }

    /// `fd`, moved above 3 when it is one of 0 to 3: the spawn puts the child's stdio and its
    /// fd 3 there, and dup2 of a descriptor onto itself would keep FD_CLOEXEC set.
    static func aboveChildDescriptors(_ fd: Int32) -> Int32 {
        guard fd >= 0, fd <= 3 else { return fd }
        let moved = fcntl(fd, F_DUPFD_CLOEXEC, 4)
        close(fd)
        return moved
    }

    /// Spawns `argv[0]` with `environment`; `fd3` becomes the child's fd 3, `output`/`error`
    /// (when not -1) its stdout and stderr. Returns the pid, or the errno value of a spawn that
    /// failed. The caller still owns (and closes) every descriptor it passed.
    static func spawn(_ argv: [String], environment: ChildEnvironment, fd3: Int32, output: Int32 = -1, error: Int32 = -1) async throws -> Result<pid_t, Errno> {
        let envp = environment.assignments
        let (rc, pid) = try await OffLoop.run { () -> (Int32, pid_t) in
            var pid: pid_t = 0
            let rc = withCStrings(argv) { cArgv in
                withCStrings(envp) { cEnvp in
                    wb_spawn_worker(argv[0], cArgv, cEnvp, fd3, output, error, &pid)
                }
            }
            return (rc, pid)
        }
        return rc == 0 ? .success(pid) : .failure(Errno(rc))
    }

    /// An errno value from a spawn, as the reason in an error message.
    struct Errno: Error, CustomStringConvertible {
        let code: Int32
        init(_ code: Int32) { self.code = code }
        var description: String { String(cString: strerror(code)) }
    }
}

/// Runs `body` with a NULL-terminated C array of the strings.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers = strings.map { strdup($0) }
    pointers.append(nil)
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
