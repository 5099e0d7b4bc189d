import CLinuxShim
import Foundation
import Glibc
import IPCWire

/// Starts the system UI process (`windowbroker-ui`: the switcher, the command overlay) on the
/// user's compositor, one surface at a time, and answers once its first frame is on screen.
///
/// The process is a control client like wmctl (it reads sessions and snapshots, asks for
/// activations and closes over the control socket); what only the broker needs to hear, that
/// it is shown and where it drew its items, comes back as one JSON line on a socket it inherits
/// as fd 3 (`SystemUIReport`). A new request replaces the surface shown.
///
/// One process is kept ready with a display (`windowbroker-ui standby`: started, the drawing
/// library and its fonts loaded; it connects once asked), and a request names its surface to
/// it on that socket; the next is started once the surface is up. Its start was half of the
/// switcher's time to its first frame.
actor SystemUIHost {
    enum Surface: Sendable, Equatable {
        case switcher(app: AppID?)
        case commandOverlay(session: SessionID)

        var name: String {
            switch self {
            case .switcher(nil): "the switcher"
            case .switcher(let app?): "Show All Windows of \(app)"
            case .commandOverlay: "the command overlay"
            }
        }

        var arguments: [String] {
            switch self {
            case .switcher(nil): ["switcher"]
            case .switcher(let app?): ["switcher", "--app", app.rawValue]
            case .commandOverlay(let session): ["overlay", "--session", session.description]
            }
        }
    }

    struct Shown: Sendable {
        var pid: pid_t
        var report: SystemUIReport
        var firstFrame: Duration
    }

    /// The executable, when one was found.
    let executable: String?
    private var environment: [String: String]
    private var childEnvironment: ChildEnvironment
    private let timeout: Duration
    private var current: (pid: pid_t, surface: Surface)?
    /// The process waiting for the next surface, and the broker's end of its socket.
    private var spare: (pid: pid_t, channel: Int32)?
    private var preparingSpare = false
    /// Set for good once the broker stops: nothing more is shown or kept ready.
    private var stopped = false
    /// How long after a surface (or the broker's start) the next spare starts: not beside the
    /// surface's first frame, whose CPU it would take.
    private let spareDelay: Duration = .milliseconds(500)

    /// `executable`: the system UI program; `environment`: the broker's, with the control
    /// socket in WINDOWBROKER_SOCKET.
    init(executable: String?, environment: [String: String], timeout: Duration = .seconds(10)) {
        self.executable = executable
        self.environment = environment.filter { !WorkerSpawner.scrubbedVariables.contains($0.key) }
        self.childEnvironment = ChildEnvironment(inheriting: self.environment)
        self.timeout = timeout
    }

    /// Whether the broker was given a display to show the system UI on.
    var hasDisplay: Bool { !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty }

    /// The surface shown now, if any.
    var shown: Surface? { current?.surface }

    func show(_ surface: Surface) async throws -> Shown {
        guard !stopped else { throw BrokerError(.requestDenied, "the broker is stopping; \(surface.name) is not shown now") }
        guard hasDisplay else {
            throw BrokerError(.invalidState, "\(surface.name) needs a display, and the broker was started without one (WAYLAND_DISPLAY); with systemd: `systemctl --user import-environment WAYLAND_DISPLAY`, then restart windowbroker")
        }
        guard let executable else {
            throw BrokerError(.internalError, "\(surface.name) cannot be shown: windowbroker-ui is not installed beside windowbrokerd (give its path with --system-ui)")
        }
        hide()
        let started = ContinuousClock.now
        let (pid, channel) = try await start(surface, executable: executable)
        current = (pid, surface)
        defer { prepareSpareSoon() }
        let timeout = self.timeout
        let line = try? await OffLoop.run { readLine(from: channel, within: timeout) }
        close(channel)
        guard let line, let report = try? JSONDecoder().decode(SystemUIReport.self, from: line) else {
            kill(pid, SIGKILL)
            if current?.pid == pid { current = nil }
            throw BrokerError(.timedOut, "\(surface.name) did not appear within \(timeout.formattedSeconds) (windowbroker-ui, pid \(pid); its messages are in the broker's log)")
        }
        if let error = report.error {
            if current?.pid == pid { current = nil }
            throw BrokerError(.invalidState, "\(surface.name) cannot be shown: \(error)")
        }
        return Shown(pid: pid, report: report, firstFrame: ContinuousClock.now - started)
    }

    /// A process showing `surface`: the spare, told which, or one started for it.
    private func start(_ surface: Surface, executable: String) async throws -> (pid: pid_t, channel: Int32) {
        if let waiting = spare {
            spare = nil
            // One with something to say already is on its way out (it failed), and its line
            // would not be this surface's answer; one whose end is closed has ended.
            var pending = pollfd(fd: waiting.channel, events: Int16(POLLIN), revents: 0)
            var request = (try? JSONEncoder().encode(surface.arguments)) ?? Data()
            request.append(0x0a)
            if poll(&pending, 1, 0) == 0, writeAll(request, to: waiting.channel) { return waiting }
            kill(waiting.pid, SIGKILL)
            close(waiting.channel)
        }
        return try await spawn(executable, surface.arguments)
    }

    /// Starts `windowbroker-ui ARGUMENTS` with a socket as fd 3; our end of it is returned.
    private func spawn(_ executable: String, _ arguments: [String]) async throws -> (pid: pid_t, channel: Int32) {
        let (channel, theirs) = try ChildProcess.socketPair(for: "the system UI")
        // It dies with the broker (PR_SET_PDEATHSIG), and stops at once if it was already gone.
        let env = childEnvironment.setting(SystemUIReport.descriptorVariable, "3").setting("WINDOWBROKER_PID", String(getpid()))
        let spawned = try await ChildProcess.spawn([executable] + arguments, environment: env, fd3: theirs)
        close(theirs)
        switch spawned {
        case .success(let pid):
            ExitWatcher.watch(pid: pid) { [weak self] _ in
                Task { await self?.exited(pid) }
            }
            return (pid, channel)
        case .failure(let reason):
            close(channel)
            throw BrokerError(.internalError, "cannot start \(executable): \(reason)")
        }
    }

    /// Starts the next spare after `spareDelay`, when there is a display and none is ready.
    func prepareSpareSoon() {
        guard spare == nil, !preparingSpare, !stopped, hasDisplay, executable != nil else { return }
        preparingSpare = true
        let delay = spareDelay
        Task {
            try? await WireRuntime.sleep(for: delay)
            await self.prepareSpare()
        }
    }

    private func prepareSpare() async {
        defer { preparingSpare = false }
        guard spare == nil, !stopped, let executable else { return }
        do {
            spare = try await spawn(executable, ["standby"])
        } catch {
            // The next surface starts its own process and says why, if it cannot either.
        }
    }

    /// Surfaces go to `display` from now on (`wmctl display`); the process kept ready is on the
    /// old one, so it ends and another is prepared.
    func useDisplay(_ display: String) {
        environment["WAYLAND_DISPLAY"] = display
        childEnvironment = ChildEnvironment(inheriting: environment)
        hide()
        endSpare()
        prepareSpareSoon()
    }

    /// The broker stops: the surface shown ends, and so does the process kept ready.
    func stop() {
        stopped = true
        hide()
        endSpare()
    }

    private func endSpare() {
        guard let waiting = spare else { return }
        kill(waiting.pid, SIGTERM)
        close(waiting.channel)
        spare = nil
    }

    /// Ends the surface shown; false when none was.
    @discardableResult
    func hide() -> Bool {
        guard let current else { return false }
        kill(current.pid, SIGTERM)
        self.current = nil
        return true
    }

    private func exited(_ pid: pid_t) {
        if current?.pid == pid { current = nil }
        if let waiting = spare, waiting.pid == pid {
            close(waiting.channel)
            spare = nil
        }
    }
}

/// Writes all of `data` to `fd`; false when the other end is gone.
private func writeAll(_ data: Data, to fd: Int32) -> Bool {
    data.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }
}

/// Reads up to the first newline (or the end) from `fd`, waiting at most `timeout` in all;
/// nil when nothing complete came.
private func readLine(from fd: Int32, within timeout: Duration) -> Data? {
    let deadline = ContinuousClock.now + timeout
    var bytes = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return nil }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Int32(max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
        if ready < 0 && errno == EINTR { continue }
        guard ready > 0 else { return nil }
        let n = read(fd, &buffer, buffer.count)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return bytes.isEmpty ? nil : bytes }
        bytes.append(contentsOf: buffer[0..<n])
        if let newline = bytes.firstIndex(of: 0x0a) { return bytes[..<newline] }
        // A report is small; anything larger is not one.
        if bytes.count > 4 << 20 { return nil }
    }
}
