import CLinuxShim
import Foundation
import Glibc
import IPCWire
import NIOCore
import NIOPosix
import Synchronization

/// How a worker process ended, as the kernel reported it.
public enum WorkerExit: Sendable, Equatable, CustomStringConvertible {
    case exited(code: Int32)
    case signaled(Int32)

    /// "it exited with status 3", "it was killed by signal 11 (Segmentation fault)".
    public var description: String {
        switch self {
        case .exited(let code): "it exited with status \(code)"
        case .signaled(let signal): "it was killed by signal \(signal) (\(strsignal(signal).map { String(cString: $0) } ?? "unknown"))"
        }
    }
}

/// What a worker's supervisor reports to the broker, in the order it happened.
package enum WorkerEvent: Sendable {
    /// A frame that is neither a reply nor the Hello (scene updates, restoration extensions).
    case message(Envelope)
    /// The socket reached end of file or failed. The process may still run.
    case connectionClosed
    /// The process ended and was reaped.
    case exited(WorkerExit)
}

/// The supervisor of one worker process: it owns the process (pid, exit watch through a
/// pidfd, reaping), its pre-connected wire connection and read loop, and the Hello handshake.
/// The broker learns everything else from `events`, which ends once the connection is closed
/// and the process reaped, so no path leaves a zombie or an open descriptor behind.
public actor WorkerHandle {
    public nonisolated let pid: pid_t
    package nonisolated let connection: WireConnection
    package nonisolated let events: AsyncStream<WorkerEvent>
    private nonisolated let sink: AsyncStream<WorkerEvent>.Continuation
    /// The session the worker was spawned for; nil for a prewarmed worker, bound later.
    public nonisolated let spawnedFor: SessionID?
    public nonisolated let appID: AppID
    /// Ends the process at once (SIGKILL for a real one); its end is still reported through `recordExit`.
    private nonisolated let stop: @Sendable () -> Void
    /// Forked from the app's zygote rather than spawned.
    public nonisolated let forked: Bool
    /// A worker spawned without a session came from a prewarm pool.
    public nonisolated var launchKind: LaunchKind { spawnedFor == nil ? .prewarmed : forked ? .forked : .spawned }

    public private(set) var exit: WorkerExit?
    public private(set) var connectionOpen = true
    /// Set by the broker before it ends the process on purpose, so the exit is not a crash.
    public private(set) var intendedEnd: DisconnectReason?
    /// Each waiter is woken by the exit or by its own deadline, whichever comes first.
    private var exitWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    private var helloWaiter: CheckedContinuation<Void, any Error>?
    private var helloState: Result<Void, BrokerError>?
    /// Messages yielded to `events` that the broker has not finished with (`processed()`):
    /// counted on the event loop as they are read, and here as they are done with. At
    /// `mailboxLimit` the connection stops reading the socket: a scene that floods the broker
    /// fills its own socket buffer, never the broker's memory.
    private nonisolated let unprocessed = Atomic<Int>(0)
    public static let mailboxLimit = 64
    /// Messages read and not yet done with (tests).
    nonisolated var unprocessedCount: Int { unprocessed.load(ordering: .relaxed) }
    /// Frames read from the worker (everything but replies) that the broker is done with, in
    /// the order read: the Hello once answered, a message once `processed()`. A reply is acted
    /// on only after the frames read before it (`waitForFrames`).
    private var framesHandled = GrowingCount()

    init(pid: pid_t, connection: WireConnection, appID: AppID, spawnedFor: SessionID?, forked: Bool = false, stop: @escaping @Sendable () -> Void) {
        self.pid = pid
        self.forked = forked
        self.stop = stop
        self.connection = connection
        self.appID = appID
        self.spawnedFor = spawnedFor
        (events, sink) = AsyncStream.makeStream(of: WorkerEvent.self)
    }

    /// The worker said a valid Hello (it started); a failure before that is a failed launch.
    public var saidHello: Bool { (try? helloState?.get()) != nil }

    /// Said its Hello, and neither exited nor closed its connection since. Readable without
    /// entering the actor: a pool takes a worker in the step that binds it, and a suspension
    /// there let the broker's other work (the old key scene's news, the workspace's write) go
    /// ahead of the bind.
    public nonisolated var isReady: Bool { ready.load(ordering: .acquiring) }
    private nonisolated let ready = Atomic<Bool>(false)

    public func markIntendedEnd(_ reason: DisconnectReason) {
        if intendedEnd == nil { intendedEnd = reason }
    }

    /// SIGKILL; the exit is still observed through the pidfd.
    public nonisolated func kill() {
        stop()
    }

    /// Wraps the broker's end of a connected socket pair: the returned supervisor takes the
    /// connection's frames until it ends. The launcher reports the process's end with
    /// `recordExit`.
    ///
    /// Frames are handed over on the event loop as they are decoded, not through the async
    /// channel's reader and a task reading it: each of those was a job of its own per frame, and
    /// a scene's report reached the broker's handling about 50 µs later (a probe build's
    /// marks, 40 prewarmed opens). The report's handling is what an open waits for after its
    /// scene answered.
    public static func adopt(
        socket: Int32, pid: pid_t, appID: AppID, spawnedFor: SessionID?, forked: Bool = false,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        stop: @escaping @Sendable () -> Void
    ) async throws -> WorkerHandle {
        let inbox = Inbox()
        let channel = try await ClientBootstrap(group: group).withConnectedSocket(socket) { channel in
            channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel, delivery: { inbox.received($0) }) }
        }
        return await withCheckedContinuation { (ready: CheckedContinuation<WorkerHandle, Never>) in
            Task {
                try? await channel.executeThenClose { _, outbound in
                    let handle = WorkerHandle(pid: pid, connection: WireConnection(channel, outbound: outbound), appID: appID, spawnedFor: spawnedFor, forked: forked, stop: stop)
                    handle.connection.execute { inbox.attach(handle) }
                    ready.resume(returning: handle)
                    // Everything read was handed over on the loop before the channel closed.
                    try? await channel.channel.closeFuture.value()
                    await handle.connectionEnded()
                    // The connection keeps its router, and the router this inbox: let go of the
                    // supervisor, or every ended process's would stay alive with it.
                    handle.connection.execute { inbox.detach() }
                }
            }
        }
    }

    /// Where a worker's frames go on its connection's event loop: the supervisor, once it
    /// exists (the Hello may be read before `adopt` has made it: those frames wait here).
    /// Confined to the event loop.
    private final class Inbox: @unchecked Sendable {
        private var handle: WorkerHandle?
        private var early: [Envelope] = []
        /// The last Hello's handling: a worker that says Hello again is answered after the
        /// first one, which alone decides (as when one reader took them in turn).
        private var hello: Task<Void, Never>?

        func received(_ envelope: Envelope) {
            guard let handle else {
                early.append(envelope)
                return
            }
            guard case .hello(let said) = envelope.body else {
                handle.receivedOnLoop(envelope)
                return
            }
            let before = hello
            hello = Task {
                await before?.value
                await handle.receivedHello(said, in: envelope)
            }
        }

        func detach() {
            handle = nil
            hello = nil
        }

        func attach(_ handle: WorkerHandle) {
            self.handle = handle
            for envelope in early { received(envelope) }
            early = []
        }
    }

    // MARK: - What the connection and the exit watch report

    /// A message (neither a reply nor the Hello), on the connection's event loop, in the order
    /// read: it goes to `events` at once.
    private nonisolated func receivedOnLoop(_ envelope: Envelope) {
        let waiting = unprocessed.add(1, ordering: .relaxed).newValue
        sink.yield(.message(envelope))
        if waiting >= Self.mailboxLimit { connection.pauseReading() }
    }

    private func receivedHello(_ hello: Windowbroker_V1_Hello, in envelope: Envelope) async {
        if let problem = Self.check(hello, spawnedFor: spawnedFor) {
            await connection.reply(to: envelope, error: problem)
            recordHello(.failure(problem))
            framesHandled.advance()
            return
        }
        await connection.reply(to: envelope, with: .welcome(.current(brokerPID: getpid())))
        recordHello(.success(()))
        framesHandled.advance()
    }

    static func check(_ hello: Windowbroker_V1_Hello, spawnedFor: SessionID?) -> BrokerError? {
        if hello.protocolVersion != WireProtocol.version {
            return BrokerError(.unsupportedVersion, "worker speaks protocol \(hello.protocolVersion); this broker speaks \(WireProtocol.version)")
        }
        if hello.peerKind != .worker {
            return BrokerError(.handshakeRequired, "a worker connection must say Hello as a worker")
        }
        let named = hello.sessionID.isEmpty ? nil : SessionID(hello.sessionID)
        if named != spawnedFor || (named == nil && !hello.sessionID.isEmpty) {
            let mine = spawnedFor?.description ?? "no session yet (prewarmed)"
            return BrokerError(.permissionDenied, "this connection belongs to \(mine), not '\(hello.sessionID)'")
        }
        return nil
    }

    /// The broker is done with one message from `events`: a connection that stopped reading
    /// at the limit reads again.
    public func processed() {
        if unprocessed.subtract(1, ordering: .relaxed).oldValue == Self.mailboxLimit {
            connection.resumeReading(if: { [self] in unprocessed.load(ordering: .relaxed) < Self.mailboxLimit })
        }
        framesHandled.advance()
    }

    /// Sends a command to the scene and returns its answer, once what the scene wrote before
    /// that answer has been handled: a report written before its answer (a title, an activity
    /// set in the callback) is taken in, and commits, ahead of what the answer leads to; the
    /// scene does not wait for those reports' acknowledgements before it answers
    /// (docs/PROTOCOL.md). A missed deadline and a closed connection are the caller's to decide.
    /// Runs on the caller's executor: the command is written on the thread that decided it.
    nonisolated(nonsending) func command(
        _ command: Windowbroker_V1_WorkerCommand.OneOf_Kind, timeout: Duration, doing: String
    ) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        let answer = try await connection.answer(
            to: .workerCommand(.with { $0.kind = command }), timeout: timeout, what: "the scene (\(doing))")
        await waitForFrames(answer.framesBefore)
        guard case .workerMessage(let message) = answer.envelope.body else {
            throw BrokerError(.workerFailed, "the scene answered \(doing) with an unexpected frame")
        }
        return message.kind
    }

    /// Returns once the broker is done with the first `count` frames read from the worker (a
    /// reply's `WireAnswer.framesBefore`): a scene's report written before its answer to a
    /// command is taken in (and its commit queued) before the command's caller goes on,
    /// without the scene waiting for the report's acknowledgement. Returns without them when
    /// they can no longer come (the connection ended before they were read).
    public func waitForFrames(_ count: UInt64) async {
        guard count > framesHandled.value else { return }
        // After the end only what was already read can still be handled.
        if !connectionOpen, count > framesHandled.value + UInt64(unprocessed.load(ordering: .relaxed)) { return }
        await withCheckedContinuation { framesHandled.wait(for: count, $0) }
    }

    func connectionEnded() {
        guard connectionOpen else { return }
        connectionOpen = false
        ready.store(false, ordering: .releasing)
        // What was read is still handled (`processed()`); what was not never will be.
        framesHandled.giveUp(beyond: framesHandled.value + UInt64(unprocessed.load(ordering: .relaxed)))
        recordHello(.failure(BrokerError(.workerFailed, "the worker closed its connection before saying hello")))
        sink.yield(.connectionClosed)
        finishIfDone()
    }

    /// The process ended (reported once, by whoever watches it).
    public func recordExit(_ status: WorkerExit) {
        guard exit == nil else { return }
        exit = status
        ready.store(false, ordering: .releasing)
        for waiter in exitWaiters.values { waiter.resume() }
        exitWaiters.removeAll()
        recordHello(.failure(BrokerError(.workerFailed, "the worker exited before saying hello (\(status))")))
        sink.yield(.exited(status))
        finishIfDone()
    }

    private func finishIfDone() {
        if exit != nil, !connectionOpen { sink.finish() }
    }

    // MARK: - Waiting

    /// Waits for the process to exit, up to `timeout`; nil when it is still running.
    public func waitForExit(timeout: Duration) async -> WorkerExit? {
        if let exit { return exit }
        let key = UUID()
        let deadline = Task { [weak self] in
            guard (try? await WireRuntime.sleep(for: timeout)) != nil else { return }
            await self?.stopWaiting(key)
        }
        defer { deadline.cancel() }
        await withCheckedContinuation { exitWaiters[key] = $0 }
        return exit
    }

    private func stopWaiting(_ key: UUID) {
        exitWaiters.removeValue(forKey: key)?.resume()
    }

    func recordHello(_ result: Result<Void, BrokerError>) {
        guard helloState == nil else { return }
        helloState = result
        if case .success = result, exit == nil, connectionOpen { ready.store(true, ordering: .releasing) }
        helloWaiter?.resume(with: result)
        helloWaiter = nil
    }

    /// Waits until the worker has sent a valid Hello.
    public func waitForHello(timeout: Duration) async throws {
        if let helloState { return try helloState.get() }
        let deadline = Task { [weak self] in
            guard (try? await WireRuntime.sleep(for: timeout)) != nil else { return }
            await self?.recordHello(.failure(BrokerError(.timedOut, "the worker did not connect within \(timeout.formattedSeconds)")))
        }
        defer { deadline.cancel() }
        try await withCheckedThrowingContinuation { helloWaiter = $0 }
    }
}

/// Watches a pidfd and reports the exit once, reaping the process (on `DescriptorWatch`'s
/// thread, which closes the pidfd after).
enum ExitWatcher {
    static func watch(pid: pid_t, onExit: @escaping @Sendable (WorkerExit) -> Void) {
        let pidfd = wb_pidfd_open(pid)
        guard pidfd >= 0 else {
            // No pidfd (descriptor limit): a blocking wait on a thread of its own still reaps it.
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                let signal = status & 0x7f
                onExit(signal == 0 ? .exited(code: (status >> 8) & 0xff) : .signaled(signal))
            }
            return
        }
        DescriptorWatch.shared.watch(pidfd) {
            var code: Int32 = -1
            var signal: Int32 = -1
            guard wb_pidfd_try_reap(pidfd, &code, &signal) == 1 else { return .again }
            onExit(code >= 0 ? .exited(code: code) : .signaled(signal))
            return .done
        }
    }
}
