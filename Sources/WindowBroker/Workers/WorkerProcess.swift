import CLinuxShim
import Dispatch
import Foundation
import Glibc
import IPCWire

/// How a worker process ended, as the kernel reported it.
public enum WorkerExit: Sendable, Equatable {
    case exited(code: Int32)
    case signaled(Int32)
}

/// One live worker process: its pid, its pre-connected wire connection, and its exit, observed
/// through a pidfd so the broker never blocks on waitpid.
public actor WorkerProcess {
    public nonisolated let pid: pid_t
    public nonisolated let connection: WireConnection
    public private(set) var exit: WorkerExit?
    /// Set by the broker before it ends the process on purpose, so the exit is not a crash.
    public var intendedEnd: DisconnectReason?
    /// Each waiter is woken by the exit or by its own deadline, whichever comes first.
    private var exitWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    private var helloWaiter: CheckedContinuation<Void, any Error>?
    private var helloState: Result<Void, BrokerError>?

    init(pid: pid_t, connection: WireConnection) {
        self.pid = pid
        self.connection = connection
    }

    public func markIntendedEnd(_ reason: DisconnectReason) {
        if intendedEnd == nil { intendedEnd = reason }
    }

    func recordExit(_ status: WorkerExit) {
        exit = status
        for waiter in exitWaiters.values { waiter.resume() }
        exitWaiters.removeAll()
        recordHello(.failure(BrokerError(.workerFailed, "the worker exited before saying hello (\(status))")))
    }

    /// Waits for the process to exit, up to `timeout`; nil when it is still running.
    public func waitForExit(timeout: Duration) async -> WorkerExit? {
        if let exit { return exit }
        let key = UUID()
        let deadline = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            await self?.stopWaiting(key)
        }
        defer { deadline.cancel() }
        await withCheckedContinuation { exitWaiters[key] = $0 }
        return exit
    }

    private func stopWaiting(_ key: UUID) {
        exitWaiters.removeValue(forKey: key)?.resume()
    }

    /// SIGKILL; the exit is still observed through the pidfd.
    public nonisolated func kill() {
        _ = Glibc.kill(pid, SIGKILL)
    }

    func recordHello(_ result: Result<Void, BrokerError>) {
        guard helloState == nil else { return }
        helloState = result
        helloWaiter?.resume(with: result)
        helloWaiter = nil
    }

    /// Waits until the worker has sent a valid Hello.
    public func waitForHello(timeout: Duration) async throws {
        if let helloState { return try helloState.get() }
        let deadline = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            await self?.recordHello(.failure(BrokerError(.timedOut, "the worker did not connect within \(timeout.formattedSeconds)")))
        }
        defer { deadline.cancel() }
        try await withCheckedThrowingContinuation { helloWaiter = $0 }
    }
}

/// Watches a pidfd and reports the exit once, reaping the process. The watch keeps itself
/// alive (its handler holds the source) until the exit has been reported.
enum ExitWatcher {
    private static let queue = DispatchQueue(label: "windowbroker.reaper")

    static func watch(pid: pid_t, onExit: @escaping @Sendable (WorkerExit) -> Void) throws {
        let pidfd = wb_pidfd_open(pid)
        guard pidfd >= 0 else { throw BrokerError(.internalError, "pidfd_open(\(pid)) failed: errno \(errno)") }
        let source = DispatchSource.makeReadSource(fileDescriptor: pidfd, queue: queue)
        // The handler captures the source: a cycle that the cancel below breaks once reaped.
        source.setEventHandler { [source] in
            var code: Int32 = -1
            var signal: Int32 = -1
            guard wb_pidfd_try_reap(pidfd, &code, &signal) == 1 else { return }
            source.cancel()
            source.setEventHandler(handler: nil)
            onExit(code >= 0 ? .exited(code: code) : .signaled(signal))
        }
        source.setCancelHandler { close(pidfd) }
        source.resume()
    }
}
