import CLinuxShim
import Foundation
import Glibc
import Synchronization

/// A kernel PSI trigger: writes `some <stall-us> <window-us>` to the pressure file and waits
/// for POLLPRI on a dedicated thread, so the broker hears about a stall within the window
/// instead of at its next poll. Unavailable on regular files (tests) and some kernels: then
/// `start` returns nil and the monitor polls.
final class PSITrigger: Sendable {
    private let fd: Int32
    /// Set by `stop()` on any thread, read by the poll thread.
    private let stopped = Atomic<Bool>(false)
    /// The spec actually installed, e.g. "some 140000 2000000".
    let spec: String

    private init(fd: Int32, spec: String) {
        self.fd = fd
        self.spec = spec
    }

    static func start(path: String, stall: Duration, window: Duration, onEvent: @escaping @Sendable () -> Void) -> PSITrigger? {
        // Only the kernel's file takes triggers; writing a spec into a plain file would clobber it.
        guard wb_is_procfs(path) == 1 else { return nil }
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        // Without CAP_SYS_RESOURCE the kernel only takes windows that are multiples of 2 s:
        // then the same stall rate over a 2 s window.
        let scaled = window.microseconds % 2_000_000 == 0 ? [] : [(stall.microseconds * 2_000_000 / window.microseconds, Int64(2_000_000))]
        var installed: String?
        for (stallMicros, windowMicros) in [(stall.microseconds, window.microseconds)] + scaled {
            let spec = "some \(stallMicros) \(windowMicros)"
            if spec.withCString({ write(fd, $0, strlen($0) + 1) }) > 0 {
                installed = spec
                break
            }
        }
        guard let installed else {
            close(fd)
            return nil
        }
        let trigger = PSITrigger(fd: fd, spec: installed)
        Thread.detachNewThread { [trigger] in
            nameThisThread("wb-psi")
            trigger.loop(onEvent)
        }
        return trigger
    }

    private func loop(_ onEvent: @Sendable () -> Void) {
        var descriptor = pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)
        while !stopped.load(ordering: .acquiring) {
            descriptor.revents = 0
            let n = poll(&descriptor, 1, 500)
            if n < 0 && errno != EINTR { break }
            if descriptor.revents & Int16(POLLERR) != 0 { break }
            if descriptor.revents & Int16(POLLPRI) != 0 { onEvent() }
        }
        close(fd)
    }

    func stop() { stopped.store(true, ordering: .releasing) }
}

extension Duration {
    var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
