import CSystemd
import Foundation

/// sd_notify for a `Type=notify` service: READY, STATUS, WATCHDOG, RELOADING, STOPPING.
/// Without `NOTIFY_SOCKET` every call is a no-op, so the broker runs the same outside systemd.
public struct SystemdNotifier: Sendable {
    public let isEnabled: Bool

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        isEnabled = !(environment["NOTIFY_SOCKET"] ?? "").isEmpty
    }

    public func notify(_ assignments: String...) {
        guard isEnabled else { return }
        _ = sd_notify(0, assignments.joined(separator: "\n"))
    }

    public func ready(status: String) { notify("READY=1", "STATUS=" + status) }
    public func status(_ line: String) { notify("STATUS=" + line) }
    public func watchdog() { notify("WATCHDOG=1") }
    public func stopping() { notify("STOPPING=1", "STATUS=Stopping: saving every connected scene") }

    public func reloading() {
        // Type=notify-reload wants the monotonic time with RELOADING=1; Type=notify ignores it.
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        notify("RELOADING=1", "MONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)")
    }

    /// Half of `WATCHDOG_USEC` when the service manager watches this process, else nil.
    public static func watchdogInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec / 2))
    }
}
