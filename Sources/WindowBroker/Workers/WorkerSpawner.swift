import CLinuxShim
import Foundation
import Synchronization
import Glibc
import IPCWire
import Logging
import NIOCore
import NIOPosix

/// Starts worker processes for the broker. `WorkerSpawner` is the real one; the in-process
/// test layer (`WindowBrokerTesting`) puts fake workers on socket pairs behind the same protocol.
public protocol WorkerLauncher: Sendable {
    /// Starts a worker of `app` for `sessionID` (nil: a prewarmed worker, bound later) and
    /// returns its supervisor, already reading the connection and watching for the exit.
    func launch(app: AppManifest, sessionID: SessionID?) async throws -> WorkerHandle
    /// Makes what launching `app`'s workers needs ready ahead of its first launch.
    func prepare(app: AppManifest) async
    /// The apps' zygotes: app -> where its zygote is.
    func zygotes() async -> [AppID: ZygoteState]
    /// Nothing more will be launched: ends whatever the launcher keeps running for it.
    func shutdown() async
    /// Workers launched from now on use this Wayland display (`wmctl display`).
    func useDisplay(_ display: String) async
}

extension WorkerLauncher {
    public func prepare(app: AppManifest) async {}
    public func zygotes() async -> [AppID: ZygoteState] { [:] }
    public func shutdown() async {}
    public func useDisplay(_ display: String) async {}
}

/// Starts one worker process for one scene session.
///
/// The worker's only link to the broker is one end of a `socketpair` inherited as fd 3: no
/// path to connect to, no token to steal, so no other process can pose as that worker. Every
/// other descriptor is closed in the child, its signal state is reset, and the environment is
/// scrubbed of what systemd gave the broker (a worker must not notify or claim sockets).
public struct WorkerSpawner: WorkerLauncher {
    /// Variables a worker must never inherit.
    public static let scrubbedVariables: Set<String> = [
        "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
    ]

    /// What every worker inherits: the broker's environment less `scrubbedVariables` and
    /// `ownVariables`, encoded once.
    private let childEnvironment: ChildEnvironment
    public var group: any EventLoopGroup
    /// Where a prewarmed worker's connection is served (nil: `group`): the loop where the opens
    /// that bind prewarmed workers are read (`Broker.requestLoop`). A connect command written
    /// from another loop's thread waited for that thread to be woken and to get a CPU: request
    /// to connect out 1.29-2.19 ms against 1.04-1.24 ms in the same run (10 prewarmed opens
    /// under `perf`, half of them each way).
    public var prewarmLoop: (any EventLoop)?
    /// Where the workers' stdout and stderr go; nil: they inherit the broker's.
    public var output: WorkerOutput?
    /// Where the workers of apps with `"zygote": true` are forked from.
    let zygotes: AppZygotes
    /// The display given with `wmctl display`, over the inherited WAYLAND_DISPLAY.
    private let display = DisplayChoice()

    /// Set for each worker or zygote (a zygote's forked child replaces its zygote's).
    static let ownVariables: Set<String> = [
        "WINDOWBROKER_FD", "WINDOWBROKER_SESSION", "WINDOWBROKER_APP", "WINDOWBROKER_PID", "WINDOWBROKER_ZYGOTE",
    ]

    public init(
        environment: [String: String], group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        prewarmLoop: (any EventLoop)? = nil, output: WorkerOutput? = nil, logger: Logger? = nil
    ) {
        self.childEnvironment = ChildEnvironment(inheriting: environment.filter {
            !Self.scrubbedVariables.contains($0.key) && !Self.ownVariables.contains($0.key)
        })
        self.group = group
        self.prewarmLoop = prewarmLoop
        self.output = output
        self.zygotes = AppZygotes(environment: childEnvironment, output: output, logger: logger)
    }

    /// Starts the app's zygote when its manifest asks for one.
    public func prepare(app: AppManifest) async {
        if app.zygote { await zygotes.prepare(app) }
    }

    public func zygotes() async -> [AppID: ZygoteState] {
        await zygotes.states()
    }

    /// Ends the apps' zygotes.
    public func shutdown() async {
        await zygotes.stopAll()
    }

    /// A zygote forks its scenes before they open the display, with the environment each
    /// fork request carries: it needs no restart.
    public func useDisplay(_ display: String) async {
        self.display.name.withLock { $0 = display }
    }

    /// Spawns `app`'s executable, for `sessionID` or (nil) as a prewarmed worker that is bound
    /// to a session later. The returned handle already reads the connection and watches the
    /// exit; its `events` say what happens.
    public func launch(app: AppManifest, sessionID: SessionID?) async throws -> WorkerHandle {
        let (brokerEnd, workerEnd) = try ChildProcess.socketPair(for: "a new worker")

        var env = childEnvironment
        if let display = display.name.withLock({ $0 }) { env = env.setting("WAYLAND_DISPLAY", display) }
        env = env
            .setting("WINDOWBROKER_FD", "3")
            .setting("WINDOWBROKER_SESSION", sessionID?.description)
            .setting("WINDOWBROKER_APP", app.id.rawValue)
            .setting("WINDOWBROKER_PID", String(getpid()))

        var forked = false
        let spawned: Result<pid_t, ChildProcess.Errno>
        do {
            spawned = try await ChildOutputPipes.start(output, session: sessionID, app: app.id) { stdout, stderr in
                if app.zygote, let pid = await zygotes.fork(app: app, environment: env, fd3: workerEnd, output: stdout, error: stderr) {
                    forked = true
                    return .success(pid)
                }
                return try await ChildProcess.spawn(
                    [app.executable] + app.arguments, environment: env, fd3: workerEnd, output: stdout, error: stderr)
            }
        } catch {
            // No pipe for its output, or the broker is shutting down: nothing started.
            close(workerEnd)
            close(brokerEnd)
            throw error
        }
        close(workerEnd)
        let pid: pid_t
        switch spawned {
        case .success(let child):
            pid = child
        case .failure(let reason):
            close(brokerEnd)
            throw BrokerError(.workerFailed, "cannot start \(app.executable): \(reason)")
        }

        let childPID = pid
        let handle: WorkerHandle
        do {
            handle = try await WorkerHandle.adopt(socket: brokerEnd, pid: pid, appID: app.id, spawnedFor: sessionID, forked: forked, group: sessionID == nil ? prewarmLoop ?? group : group) {
                _ = Glibc.kill(childPID, SIGKILL)
            }
        } catch {
            Glibc.kill(pid, SIGKILL)
            ExitWatcher.watch(pid: pid) { _ in }
            throw BrokerError(.internalError, "cannot adopt the worker's socket: \(error)")
        }
        ExitWatcher.watch(pid: pid) { exit in
            Task { await handle.recordExit(exit) }
        }
        return handle
    }
}

/// The display `wmctl display` gave, shared by every copy of the spawner.
final class DisplayChoice: Sendable {
    let name = Mutex<String?>(nil)
}
