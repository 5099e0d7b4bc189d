import Glibc

/// Names the calling thread as `ps -L`, `top -H`, `perf` and a core dump show it. Foundation's
/// `Thread.name` names no kernel thread on Linux (a thread started from an event loop showed as
/// that loop), and the kernel keeps at most 15 bytes of a name. prctl(PR_SET_NAME) is variadic,
/// which Swift cannot call; the thread's own `comm` file is the same name.
func nameThisThread(_ name: StaticString) {
    precondition(name.utf8CodeUnitCount <= 15, "a thread's name is at most 15 bytes")
    let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard file >= 0 else { return }
    _ = write(file, name.utf8Start, name.utf8CodeUnitCount)
    close(file)
}
