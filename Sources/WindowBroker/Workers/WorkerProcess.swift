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
    public nonisolated let sessionID: UUID
    public nonisolated let connection: WireConnection
    public private(set) var exit: WorkerExit?
    /// Set by the broker before it ends the process on purpose, so the exit is not a crash.
    public var intendedEnd: DisconnectReason?
    private var exitWaiters: [CheckedContinuation<WorkerExit, Never>] = []
    private var helloWaiter: CheckedContinuation<Void, any Error>?
    private var helloState: Result<Void, BrokerError>?

    init(pid: pid_t, sessionID: UUID, connection: WireConnection) {
        self.pid = pid
        self.sessionID = sessionID
        self.connection = connection
    }

    public func markIntendedEnd(_ reason: DisconnectReason) {
        if intendedEnd == nil { intendedEnd = reason }
    }

    func recordExit(_ status: WorkerExit) {
        exit = status
        for waiter in exitWaiters { waiter.resume(returning: status) }
        exitWaiters.removeAll()
        recordHello(.failure(BrokerError(.workerFailed, "the worker exited before saying hello (\(status))")))
    }

    /// Waits for the process to exit, up to `timeout`; nil when it is still running.
    public func waitForExit(timeout: Duration) async -> WorkerExit? {
        if let exit { return exit }
        let deadline = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            await self?.wakeExitWaiters()
        }
        defer { deadline.cancel() }
        _ = await withCheckedContinuation { exitWaiters.append($0) }
        return exit
    }

    private func wakeExitWaiters() {
        // A timed-out wait resumes with a placeholder; callers read `exit` for the truth.
        for waiter in exitWaiters { waiter.resume(returning: .signaled(0)) }
        exitWaiters.removeAll()
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

/// Watches a pidfd and reports the exit once. The source lives until the process is reaped.
final class ExitWatcher: @unchecked Sendable {
    // Only touched on `queue`.
    private var source: DispatchSourceRead?
    private let pidfd: Int32
    private static let queue = DispatchQueue(label: "windowbroker.reaper")

    init(pid: pid_t, onExit: @escaping @Sendable (WorkerExit) -> Void) throws {
        pidfd = wb_pidfd_open(pid)
        guard pidfd >= 0 else { throw BrokerError(.internalError, "pidfd_open(\(pid)) failed: errno \(errno)") }
        let source = DispatchSource.makeReadSource(fileDescriptor: pidfd, queue: Self.queue)
        let fd = pidfd
        source.setEventHandler { [weak self] in
            var code: Int32 = -1
            var signal: Int32 = -1
            guard wb_pidfd_try_reap(fd, &code, &signal) == 1 else { return }
            self?.source?.cancel()
            onExit(code >= 0 ? .exited(code: code) : .signaled(signal))
        }
        source.setCancelHandler { close(fd) }
        self.source = source
        source.resume()
    }
}
