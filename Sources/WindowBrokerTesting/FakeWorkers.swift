/// WindowBrokerTesting: the broker and its control server in the test process, with fake
/// workers on socket pairs instead of processes.
///
/// A fake worker speaks the real wire protocol over a real socket pair (Hello, commands,
/// replies), so the broker under test runs its real supervisor, lifecycle driver and control
/// server. What a process would do on its own (answer, stall, answer late, crash, close its
/// socket and keep running) the test decides, command by command: that makes interleavings
/// such as two opens at once, a reply after its deadline or an exit in the middle of a step
/// deterministic. Process-level tests (real `windowbrokerd`, real workers) stay the reference.
import CLinuxShim
import Foundation
import Glibc
import IPCWire
import NIOCore
import NIOPosix
import WindowBroker

package typealias WorkerCommandKind = Windowbroker_V1_WorkerCommand.OneOf_Kind
package typealias WorkerMessageKind = Windowbroker_V1_WorkerMessage.OneOf_Kind

/// Launches fake workers for the broker and lets a test hold chosen commands.
public actor FakeWorkers: WorkerLauncher {
    /// Commands matching a hold are handed to the test instead of being answered.
    struct Hold {
        var app: AppID?
        var matches: @Sendable (WorkerCommandKind) -> Bool
        var sink: AsyncStream<FakeCommand>.Continuation
    }

    private var holds: [UUID: Hold] = [:]
    private var launched: [FakeWorker] = []
    private var nextPID: pid_t = 900_000_000  // above any real pid_max: nothing real is ever signalled
    /// Launches fail with this error while set (a missing executable, a spawn failure).
    public var launchFailure: BrokerError?
    /// Every launch the broker asked for, failed ones included.
    public private(set) var launchAttempts = 0

    public init() {}

    public func failLaunches(with error: BrokerError?) {
        launchFailure = error
    }

    /// Every worker launched so far, in launch order.
    public var workers: [FakeWorker] { launched }

    /// From now on, commands of `app` (any app if nil) that match are parked and delivered
    /// to the returned stream, in arrival order, until the stream is dropped.
    package func hold(app: AppID? = nil, _ matches: @escaping @Sendable (WorkerCommandKind) -> Bool) -> AsyncStream<FakeCommand> {
        let key = UUID()
        let (stream, sink) = AsyncStream.makeStream(of: FakeCommand.self)
        holds[key] = Hold(app: app, matches: matches, sink: sink)
        sink.onTermination = { _ in Task { await self.release(key) } }
        return stream
    }

    private func release(_ key: UUID) {
        holds.removeValue(forKey: key)
    }

    func holdFor(app: AppID, command: WorkerCommandKind) -> AsyncStream<FakeCommand>.Continuation? {
        holds.values.first { ($0.app == nil || $0.app == app) && $0.matches(command) }?.sink
    }

    public nonisolated func launch(app: AppManifest, sessionID: SessionID?) async throws -> WorkerHandle {
        try await launchWorker(app: app, sessionID: sessionID)
    }

    private func launchWorker(app: AppManifest, sessionID: SessionID?) async throws -> WorkerHandle {
        launchAttempts += 1
        if let launchFailure { throw launchFailure }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, wb_sock_stream() | wb_sock_cloexec(), 0, &pair) == 0 else {
            throw BrokerError(.resourceExhausted, "socketpair: \(String(cString: strerror(errno)))")
        }
        nextPID += 1
        let worker = FakeWorker(pid: nextPID, appID: app.id, sessionID: sessionID, launcher: self)
        let handle = try await WorkerHandle.adopt(socket: pair[0], pid: nextPID, appID: app.id, spawnedFor: sessionID) {
            Task { await worker.die(.signaled(SIGKILL)) }
        }
        try await worker.start(socket: pair[1], handle: handle)
        launched.append(worker)
        return handle
    }
}

/// A command a fake worker received and the test holds: answer it, answer it later, or let
/// the worker crash instead.
public struct FakeCommand: Sendable {
    package let kind: WorkerCommandKind
    public let worker: FakeWorker
    let requestID: UInt64

    /// Sends the reply a well-behaved scene would send (and, for didDisconnect, exits).
    public func answer() async {
        await worker.reply(to: requestID, with: FakeWorker.defaultReply(to: kind))
        if case .disconnect = kind { await worker.die(.exited(code: 0)) }
    }

    package func answer(with reply: WorkerMessageKind) async {
        await worker.reply(to: requestID, with: reply)
    }

    /// "didBecomeActive", "connect", ...: what the command asks for, for assertions.
    public var name: String { FakeWorker.name(of: kind) }
}

/// One fake scene process: the far end of a socket pair. It says Hello, records every
/// command and answers it at once unless a hold parks it.
public actor FakeWorker {
    public nonisolated let pid: pid_t
    public nonisolated let appID: AppID
    public nonisolated let sessionID: SessionID?
    private let launcher: FakeWorkers
    private var channel: (any Channel)?
    /// The broker's supervisor of this worker, not kept alive from here: a test sees when the
    /// broker let go of it (`supervisorReleased`).
    private weak var handle: WorkerHandle?
    private var ended = false
    /// The commands received, one element per command as it came over the socket: its name
    /// (`FakeCommand.name`), then those of the transitions it carries, in the order a scene
    /// runs them.
    public private(set) var commands: [[String]] = []
    /// The same names, one after the other.
    public var received: [String] { commands.flatMap { $0 } }

    init(pid: pid_t, appID: AppID, sessionID: SessionID?, launcher: FakeWorkers) {
        self.pid = pid
        self.appID = appID
        self.sessionID = sessionID
        self.launcher = launcher
    }

    func start(socket: Int32, handle: WorkerHandle) async throws {
        self.handle = handle
        let wire = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(socket) { channel in
            channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel) }
        }
        channel = wire.channel
        Task {
            try? await wire.executeThenClose { inbound, outbound in
                var hello = Envelope()
                hello.id = 1
                hello.body = .hello(.current(.worker, clientName: "fake-\(self.appID)", sessionID: self.sessionID?.description ?? ""))
                try await outbound.write(hello)
                for try await envelope in inbound {
                    guard case .workerCommand(let command) = envelope.body, let kind = command.kind else { continue }
                    await self.receive(kind, requestID: envelope.id)
                }
            }
        }
    }

    private func receive(_ kind: WorkerCommandKind, requestID: UInt64) async {
        commands.append(Self.names(of: kind))
        if let hold = await launcher.holdFor(app: appID, command: kind) {
            hold.yield(FakeCommand(kind: kind, worker: self, requestID: requestID))
            return
        }
        reply(to: requestID, with: Self.defaultReply(to: kind))
        if case .disconnect = kind {
            // A scene process exits after acknowledging didDisconnect.
            await die(.exited(code: 0))
        }
    }

    func reply(to requestID: UInt64, with body: WorkerMessageKind) {
        write(body, id: 0, replyTo: requestID)
    }

    /// Sends an unsolicited message, as a scene does when its activity or title changes (with
    /// an `id`: as a request the broker answers, as the SDK sends it).
    package func send(_ body: WorkerMessageKind, id: UInt64 = 0) {
        write(body, id: id, replyTo: 0)
    }

    private func write(_ body: WorkerMessageKind, id: UInt64, replyTo: UInt64) {
        guard !ended, let channel else { return }
        var envelope = Envelope()
        envelope.id = id
        envelope.replyTo = replyTo
        envelope.body = .workerMessage(.with { $0.kind = body })
        channel.writeAndFlush(envelope, promise: nil)
    }

    /// The process ends: its socket closes and the broker's supervisor is told how it ended.
    public func die(_ status: WorkerExit) async {
        guard !ended else { return }
        ended = true
        try? await channel?.close()
        await handle?.recordExit(status)
    }

    /// The socket closes but the "process" runs on, as a buggy worker's would; the broker
    /// is expected to stop it (which ends it with SIGKILL through `die`).
    public func closeConnection() async {
        try? await channel?.close()
    }

    public var hasEnded: Bool { ended }

    /// Nothing holds the broker's supervisor of this worker any more (it ended and the broker
    /// forgot it): what a launch leaves behind once its process is gone.
    public var supervisorReleased: Bool { handle == nil }

    static func defaultReply(to kind: WorkerCommandKind) -> WorkerMessageKind {
        switch kind {
        case .connect(let connect): .connected(.with { $0.configuration = connect.session.configuration })
        case .restorationActivityRequest: .restorationActivity(.init())
        case .memoryWarning: .memoryWarning(.init())
        case .performAction: .actionResult(.init())
        case .refresh: .sceneUpdate(.init())
        case .performCommand: .commandResult(.init())
        case .validateCommands(let request): .commandStates(.with { $0.commands = request.commands })
        default: .ack(.init())
        }
    }

    static func names(of kind: WorkerCommandKind) -> [String] {
        let carried: [Windowbroker_V1_LifecycleTransition]
        switch kind {
        case .connect(let connect): carried = connect.then
        case .transition(let transition): carried = transition.then
        default: carried = []
        }
        return [name(of: kind)] + carried.map { name(of: .transition($0)) }
    }

    static func name(of kind: WorkerCommandKind) -> String {
        switch kind {
        case .connect: "connect"
        case .restoreInteractionState: "restoreInteractionState"
        case .transition(let transition):
            switch transition.transition {
            case .willEnterForeground: "willEnterForeground"
            case .didBecomeActive: "didBecomeActive"
            case .willResignActive: "willResignActive"
            case .didEnterBackground: "didEnterBackground"
            default: "transition"
            }
        case .restorationActivityRequest: "saveRestorationActivity"
        case .continueActivity: "continueActivity"
        case .performAction(let action): "perform:\(action.action)"
        case .disconnect: "disconnect"
        case .discardSessions: "discardSessions"
        case .memoryWarning: "memoryWarning"
        case .refresh: "refresh"
        case .update(let delivery): "update:\(delivery.sequence)"
        case .performCommand(let request): "command:\(request.command)"
        case .validateCommands: "validateCommands"
        case .keyStatus(let status): status.isKey ? "didBecomeKey" : "didResignKey"
        }
    }
}
