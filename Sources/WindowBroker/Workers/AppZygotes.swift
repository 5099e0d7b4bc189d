import CLinuxShim
import Foundation
import Glibc
import IPCWire
import Logging

/// Where an app's zygote is, for `wmctl status` and `wmctl apps`.
public enum ZygoteState: Sendable, Equatable, CustomStringConvertible {
    case starting
    case ready(pid: pid_t)
    /// Its workers are spawned; `triedAgain`: a zygote is started again at a later launch.
    case unavailable(reason: String, triedAgain: Bool)

    public var description: String {
        switch self {
        case .starting: "starting"
        case .ready(let pid): "ready, pid \(pid)"
        case .unavailable(let reason, let triedAgain):
            "unavailable: \(reason)" + (triedAgain ? " (tried again at a launch \(AppZygotes.retryAfter.formattedSeconds) later)" : "")
        }
    }
}

/// The zygotes of the apps whose manifests ask for one (`"zygote": true`), one per app.
///
/// A zygote is a process of the app's own executable, started with `WINDOWBROKER_ZYGOTE=1`,
/// that stops before the program's initialisers run (the SDK's `CSceneZygote`) and forks a
/// worker whenever the broker asks. The fork skips what every exec'd worker pays again: the
/// kernel's exec, the loader, the relocation of a large program. Its relocated data stays
/// shared between the app's workers, so each keeps less memory of its own. The child is the
/// broker's own (CLONE_PARENT): it is supervised, reaped and killed like a spawned worker.
///
/// A zygote starts when the broker reads the app's manifest (or at its first launch after it
/// ended or failed). An app whose build cannot be a zygote (a shared Swift runtime) says so
/// once; its workers are then spawned, as are any whose zygote is gone or does not answer. A
/// zygote never changes what a worker does, only how it starts.
actor AppZygotes {
    struct Zygote: Sendable {
        let pid: pid_t
        let channel: Int32
        /// The manifest it was started from: one that changed since (another executable, other
        /// arguments) gets a new zygote, and this one forks nothing more.
        let manifest: AppManifest
        var executable: String { manifest.executable }
    }

    private enum State {
        case starting(Task<Zygote?, Never>)
        case ready(Zygote)
        /// Not tried again before `retry` (never, for a build that refused) unless the manifest
        /// names another executable.
        case unavailable(reason: String, retry: ContinuousClock.Instant?, executable: String)
    }

    private var zygotes: [AppID: State] = [:]
    /// Fork requests under way, per zygote, and the channels of retired zygotes that close
    /// once their last request is done.
    private var requestsInFlight: [pid_t: Int] = [:]
    private var closeAfterRequests: [pid_t: Int32] = [:]
    private var stopped = false
    private let environment: ChildEnvironment
    private let output: WorkerOutput?
    private let logger: Logger?

    /// How long a zygote has to say it is ready, and to answer one fork.
    static let startTimeout: Int32 = 5_000
    static let forkTimeout: Int32 = 2_000
    /// After a zygote failed to start or ended, workers are spawned for this long.
    static let retryAfter: Duration = .seconds(30)

    init(environment: ChildEnvironment, output: WorkerOutput?, logger: Logger?) {
        self.environment = environment
        self.output = output
        self.logger = logger
    }

    /// Forks a worker of `app` from its zygote (started first when there is none); nil when
    /// the app has no usable zygote: the caller spawns the worker instead. The descriptors are
    /// the caller's, as for a spawn.
    func fork(app: AppManifest, environment: ChildEnvironment, fd3: Int32, output: Int32, error: Int32) async -> pid_t? {
        _ = await zygote(for: app)
        // Read after the wait, not taken from it: one that ended meanwhile has its channel closed.
        guard case .ready(let zygote) = zygotes[app.id], zygote.manifest == app else { return nil }
        // The environment as the zygote's child takes it: each assignment NUL-terminated.
        let request = environment.block
        // The channel stays open until this request is done, even if the zygote is retired
        // meanwhile: a descriptor number closed under a request could be reused by the next
        // connection, which would then receive the request.
        requestsInFlight[zygote.pid, default: 0] += 1
        // The request is written here, so the zygote forks without waiting for a pool thread
        // to wake; its answer (the child's pid) is read on an event loop too (`ZygoteAnswer`).
        var reply: Int32 = -1
        let sent = request.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                wb_zygote_request(zygote.channel, $0.baseAddress, UInt(bytes.count), fd3, output, error, &reply)
            }
        }
        let result: (Int32, pid_t)?
        if sent != 0 {
            result = (sent, 0)
        } else {
            // nil (not waited for): the caller spawns its worker.
            result = await ZygoteAnswer.read(from: reply, timeout: .milliseconds(Int64(Self.forkTimeout)))
        }
        requestsInFlight[zygote.pid]! -= 1
        if requestsInFlight[zygote.pid] == 0 {
            requestsInFlight[zygote.pid] = nil
            if let channel = closeAfterRequests.removeValue(forKey: zygote.pid) { close(channel) }
        }
        guard let (rc, pid) = result else { return nil }
        if rc == 0 { return pid }
        let reason = switch rc {
        case ETIMEDOUT: "it did not answer within \(Self.forkTimeout) ms"
        case EAGAIN: "its queue of fork requests is full (it stopped reading them)"
        default: String(cString: strerror(rc))
        }
        logger?.warning("the app's zygote could not fork a worker; spawning it instead", metadata: [
            "app": "\(app.id)", "zygote": "\(zygote.pid)", "reason": "\(reason)",
        ])
        if rc == EPIPE || rc == ETIMEDOUT || rc == EAGAIN { retire(app.id, zygote, reason: "could not fork: \(reason)") }
        return nil
    }

    /// Where each app's zygote is.
    func states() -> [AppID: ZygoteState] {
        zygotes.mapValues { state in
            switch state {
            case .starting: .starting
            case .ready(let zygote): .ready(pid: zygote.pid)
            case .unavailable(let reason, let retry, _): .unavailable(reason: reason, triedAgain: retry != nil)
            }
        }
    }

    /// Starts the app's zygote if it has none yet (and may have one).
    func prepare(_ app: AppManifest) async {
        _ = await zygote(for: app)
    }

    /// The app's zygote, once ready; nil when it has none that works.
    private func zygote(for app: AppManifest) async -> Zygote? {
        guard !stopped else { return nil }
        switch zygotes[app.id] {
        case .ready(let zygote) where zygote.manifest == app:
            return zygote
        case .ready(let zygote):
            retire(app.id, zygote, reason: nil)
        case .starting(let task):
            // Started for a manifest that changed meanwhile: retired, and asked again.
            guard let started = await task.value, started.manifest != app else { return await task.value }
            retire(app.id, started, reason: nil)
            return await zygote(for: app)
        case .unavailable(_, let retry, let executable):
            let due = retry.map { ContinuousClock.now >= $0 } ?? false
            guard due || executable != app.executable else { return nil }
        case nil:
            break
        }
        let task = Task { await start(app) }
        zygotes[app.id] = .starting(task)
        return await task.value
    }

    private func start(_ app: AppManifest) async -> Zygote? {
        switch await Self.spawn(app, environment: environment, output: output) {
        case .success(let zygote):
            ExitWatcher.watch(pid: zygote.pid) { exit in
                Task { await self.ended(app.id, pid: zygote.pid, exit: exit) }
            }
            let (rc, message) = await Self.firstMessage(zygote.channel)
            if !stopped, rc == 0, message == "ready" {
                zygotes[app.id] = .ready(zygote)
                logger?.info("app zygote ready: the app's workers are forked from it", metadata: ["app": "\(app.id)", "pid": "\(zygote.pid)"])
                return zygote
            }
            _ = Glibc.kill(zygote.pid, SIGKILL)
            close(zygote.channel)
            if stopped {
                return nil
            } else if rc == 0, message.hasPrefix("refused: ") {
                // The build, not the moment: this executable will refuse again.
                unavailable(app.id, executable: app.executable, reason: String(message.dropFirst("refused: ".count)), retry: nil)
            } else if rc == 0, !message.hasPrefix("failed: ") {
                // Not the SDK's zygote at all (a worker in another language took the channel
                // for its socket): it never will be one.
                unavailable(app.id, executable: app.executable, reason: "its program does not speak the zygote's protocol (it is not built on the SceneWorker SDK)", retry: nil)
            } else {
                let reason = rc == 0 ? String(message.dropFirst("failed: ".count))
                    : rc == ETIMEDOUT ? "it was not ready within \(Self.startTimeout) ms" : "it ended before it was ready"
                unavailable(app.id, executable: app.executable, reason: reason, retry: .now + Self.retryAfter)
            }
        case .failure(let failure):
            unavailable(app.id, executable: app.executable, reason: failure.reason, retry: .now + Self.retryAfter)
        }
        return nil
    }

    private func unavailable(_ app: AppID, executable: String, reason: String, retry: ContinuousClock.Instant?) {
        zygotes[app] = .unavailable(reason: reason, retry: retry, executable: executable)
        logger?.notice("no zygote for the app: its workers are spawned", metadata: [
            "app": "\(app)", "reason": "\(reason)", "retry": "\(retry == nil ? "no" : "in \(Self.retryAfter.formattedSeconds)")",
        ])
    }

    /// Stops using `zygote` and ends it (killed: one that does not answer would not read the
    /// channel's close either).
    private func retire(_ app: AppID, _ zygote: Zygote, reason: String?) {
        guard case .ready(let current) = zygotes[app], current.pid == zygote.pid else { return }
        closeChannel(of: zygote)
        _ = Glibc.kill(zygote.pid, SIGKILL)
        if let reason {
            unavailable(app, executable: zygote.executable, reason: reason, retry: .now + Self.retryAfter)
        } else {
            zygotes[app] = nil
        }
    }

    private func closeChannel(of zygote: Zygote) {
        if requestsInFlight[zygote.pid] != nil {
            closeAfterRequests[zygote.pid] = zygote.channel
        } else {
            close(zygote.channel)
        }
    }

    private func ended(_ app: AppID, pid: pid_t, exit: WorkerExit) {
        guard case .ready(let zygote) = zygotes[app], zygote.pid == pid else { return }
        closeChannel(of: zygote)
        zygotes[app] = nil
        // The next launch starts a new one; a zygote that keeps dying is not retried at once.
        logger?.warning("the app's zygote ended", metadata: ["app": "\(app)", "pid": "\(pid)", "exit": "\(exit)"])
        if case .signaled = exit { unavailable(app, executable: zygote.executable, reason: "it ended (\(exit))", retry: .now + Self.retryAfter) }
    }

    /// Stops every zygote (the broker is shutting down); none starts after this.
    func stopAll() {
        stopped = true
        for (app, state) in zygotes {
            if case .ready(let zygote) = state { retire(app, zygote, reason: nil) }
        }
    }

    // MARK: - The process

    struct StartFailure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func spawn(_ app: AppManifest, environment: ChildEnvironment, output: WorkerOutput?) async -> Result<Zygote, StartFailure> {
        var pair: [Int32] = [-1, -1]
        guard wb_seqpacket_pair(&pair) == 0 else {
            return .failure(StartFailure("cannot create its channel: \(String(cString: strerror(errno)))"))
        }
        let channel = pair[0]
        let zygoteEnd = ChildProcess.aboveChildDescriptors(pair[1])
        let env = environment
            .setting("WINDOWBROKER_ZYGOTE", "1")
            .setting("WINDOWBROKER_APP", app.id.rawValue)
            .setting("WINDOWBROKER_PID", String(getpid()))
        // What the zygote itself prints is logged as the app's.
        let spawned: Result<pid_t, ChildProcess.Errno>
        do {
            spawned = try await ChildOutputPipes.start(output, session: nil, app: app.id) { stdout, stderr in
                try await ChildProcess.spawn(
                    [app.executable] + app.arguments, environment: env, fd3: zygoteEnd, output: stdout, error: stderr)
            }
        } catch {
            close(channel)
            close(zygoteEnd)
            // A pipe that could not be made says why; a spawn throws only while the broker stops.
            return .failure(StartFailure(error is BrokerError ? "\(error)" : "cannot start \(app.executable): the broker is shutting down"))
        }
        close(zygoteEnd)
        switch spawned {
        case .success(let pid):
            return .success(Zygote(pid: pid, channel: channel, manifest: app))
        case .failure(let errno):
            close(channel)
            return .failure(StartFailure("cannot start \(app.executable): \(errno)"))
        }
    }

    private static func firstMessage(_ channel: Int32) async -> (Int32, String) {
        (try? await OffLoop.run { () -> (Int32, String) in
            var buffer = [CChar](repeating: 0, count: 1024)
            let rc = wb_zygote_first_message(channel, startTimeout, &buffer, UInt(buffer.count))
            return (rc, rc == 0 ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "")
        }) ?? (ECANCELED, "")
    }
}
