import Foundation
import Glibc
import IPCWire
import Logging
import NIOCore
import Synchronization

/// What scene processes print, attributed: each worker's stdout and stderr arrive on a pipe of
/// its own, and every line is logged with the worker's session and app (journald fields
/// `SESSION_ID`, `APP_ID`) and kept in a bounded buffer per session for `wmctl logs`. A crash
/// backtrace is then the scene's, not 130 anonymous lines in the broker's log.
public final class WorkerOutput: Sendable {
    public struct Line: Sendable, Equatable {
        public var time: Date
        public var pid: Int32
        public var text: String
        public var stream: Stream
    }

    /// Which of the worker's outputs a line came from: stderr is logged at a higher priority.
    public enum Stream: String, Sendable {
        case stdout, stderr
    }

    /// Lines kept per session, and the longest line kept whole.
    public static let linesPerSession = 500
    public static let maxLineBytes = 4096
    /// Reads of `readBuffer` (16 KiB) per turn of a worker's pipe on the watch's thread.
    static let readsPerTurn = 16

    private struct State {
        var sessionOfPID: [Int32: (session: SessionID?, app: AppID, readers: Int)] = [:]
        /// A ring per session: the oldest line goes in O(1) when a new one comes.
        var lines: [SessionID: CircularBuffer<Line>] = [:]
        /// Per app, what its last process that failed to start printed (`wmctl logs --app`).
        var failedLaunches: [AppID: [Line]] = [:]
    }

    private let state = Mutex(State())
    private let logger: Logger
    /// One read buffer for every worker's output: the handlers run one at a time, on
    /// `DescriptorWatch`'s thread.
    /// (One per pipe was 32 KiB for each live scene, kept as long as it ran.)
    nonisolated(unsafe) private static let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16384, alignment: 1)

    public init(logger: Logger) {
        self.logger = logger
    }

    /// A pipe for a new worker: the write end goes to the child (then is closed here); the read
    /// end is read until the worker and everything it started have closed it.
    func pipe() throws -> (read: Int32, write: Int32) {
        let pipe = try ChildProcess.pipe(for: "a new worker's output")
        // Only the broker's end is non-blocking: the worker writes as to any terminal or file.
        _ = fcntl(pipe.read, F_SETFL, fcntl(pipe.read, F_GETFL) | O_NONBLOCK)
        return pipe
    }

    /// Starts reading one of a worker's outputs (each has a pipe: a worker has two readers,
    /// and its pid's owner stays known until both have ended).
    func follow(_ fd: Int32, stream: Stream, pid: Int32, session: SessionID?, app: AppID) {
        state.withLock { state in
            if state.sessionOfPID[pid] == nil { state.sessionOfPID[pid] = (session, app, 0) }
            state.sessionOfPID[pid]?.readers += 1
        }
        // Touched only on the watch's thread, one event at a time.
        nonisolated(unsafe) var pending = Data()
        DescriptorWatch.shared.watch(fd) { [weak self] in
            let buffer = Self.readBuffer
            // A bounded share at a time: a worker that writes without pause must not keep the
            // watch's one thread from every other worker's output and exit (it is called again
            // while the pipe holds more).
            for _ in 0..<Self.readsPerTurn {
                let count = read(fd, buffer.baseAddress, buffer.count)
                if count > 0 {
                    pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                    while let newline = pending.firstIndex(of: 0x0A) {
                        self?.record(pid: pid, stream, Data(pending[pending.startIndex..<newline]))
                        pending.removeSubrange(pending.startIndex...newline)
                    }
                    if pending.count > Self.maxLineBytes {
                        self?.record(pid: pid, stream, pending)
                        pending.removeAll()
                    }
                    continue
                }
                if count < 0, errno == EAGAIN || errno == EINTR { return .again }
                // End of file: every writer is gone (the watch closes the pipe).
                if !pending.isEmpty { self?.record(pid: pid, stream, pending) }
                pending.removeAll()
                self?.state.withLock { state in
                    state.sessionOfPID[pid]?.readers -= 1
                    if state.sessionOfPID[pid]?.readers ?? 0 <= 0 { state.sessionOfPID[pid] = nil }
                }
                return .done
            }
            return .again
        }
    }

    /// Whether a process's output is still being read (its pipes have not ended).
    func isFollowing(pid: Int32) -> Bool {
        state.withLock { $0.sessionOfPID[pid] != nil }
    }

    /// A prewarmed worker was bound to a session: its lines are that session's from now on.
    func bind(pid: Int32, session: SessionID) {
        state.withLock { $0.sessionOfPID[pid]?.session = session }
    }

    private func record(pid: Int32, _ stream: Stream, _ data: Data) {
        var text = String(decoding: data.prefix(Self.maxLineBytes), as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        let line = Line(time: Date(), pid: pid, text: text, stream: stream)
        let owner = state.withLock { state -> (SessionID?, AppID?) in
            let owner: (SessionID?, AppID?) = state.sessionOfPID[pid].map { ($0.session, $0.app) } ?? (nil, nil)
            if let session = owner.0 {
                state.lines[session, default: CircularBuffer(initialCapacity: 16)].append(line)
                if state.lines[session]!.count > Self.linesPerSession { state.lines[session]!.removeFirst() }
            }
            return owner
        }
        // stdout is what the scene tells, stderr what went wrong: the journal ranks them apart.
        logger.log(level: stream == .stderr ? .warning : .info, "\(text)", metadata: [
            "session": "\(owner.0?.description ?? "")", "app": "\(owner.1?.rawValue ?? "")", "pid": "\(pid)", "event": "workerOutput",
            "STREAM": "\(stream.rawValue)",
        ])
    }

    /// The last `count` lines a session's processes printed (across its launches), and of
    /// those only the newest that fit in `maxBytes` together.
    public func lines(of session: SessionID, last count: Int, maxBytes: Int = .max) -> [Line] {
        let kept = state.withLock { Array(($0.lines[session] ?? []).suffix(count)) }
        var bytes = 0
        let fitting = kept.reversed().prefix { line in
            bytes += line.text.utf8.count + 32  // the line's text and its time and pid
            return bytes <= maxBytes
        }
        return Array(fitting.reversed())
    }

    /// A process of `app` failed to start: what it printed is kept for the app, even when its
    /// session is not (a new session whose first launch failed).
    func keepFailedLaunch(pid: Int32, session: SessionID, app: AppID) {
        state.withLock { state in
            state.failedLaunches[app] = (state.lines[session].map(Array.init) ?? []).filter { $0.pid == pid }
        }
    }

    /// What the app's last process that failed to start printed; empty when none failed.
    public func failedLaunch(of app: AppID) -> [Line] {
        state.withLock { $0.failedLaunches[app] ?? [] }
    }

    /// A discarded session's lines go with it.
    func forget(_ session: SessionID) {
        _ = state.withLock { $0.lines.removeValue(forKey: session) }
    }
}

/// A new child's stdout and stderr: pipes that `WorkerOutput` reads, or with no `WorkerOutput`
/// the broker's own, inherited. `start` hands the write ends to the code that starts the child
/// (a spawn or a zygote's fork), then closes them, and reads the other ends under the child's
/// pid, or closes them too when it did not start.
struct ChildOutputPipes {
    private typealias Pipe = (read: Int32, write: Int32)
    private let output: WorkerOutput?
    private let pipes: (stdout: Pipe, stderr: Pipe)?

    /// Starts a child through `body`, which gets the descriptors it takes as its stdout and
    /// stderr (-1: the broker's, inherited); its lines are then attributed to `session` and
    /// `app`. Throws what making the pipes or `body` threw, with every end closed.
    static func start(
        _ output: WorkerOutput?, session: SessionID?, app: AppID,
        _ body: (_ stdout: Int32, _ stderr: Int32) async throws -> Result<pid_t, ChildProcess.Errno>
    ) async throws -> Result<pid_t, ChildProcess.Errno> {
        let pipes = try ChildOutputPipes(output)
        let started: Result<pid_t, ChildProcess.Errno>
        do {
            started = try await body(pipes.pipes?.stdout.write ?? -1, pipes.pipes?.stderr.write ?? -1)
        } catch {
            pipes.failed()
            throw error
        }
        switch started {
        case .success(let pid): pipes.started(pid: pid, session: session, app: app)
        case .failure: pipes.failed()
        }
        return started
    }

    private init(_ output: WorkerOutput?) throws {
        self.output = output
        guard let output else {
            pipes = nil
            return
        }
        let stdout = try output.pipe()
        do {
            pipes = (stdout, try output.pipe())
        } catch {
            close(stdout.read)
            close(stdout.write)
            throw error
        }
    }

    /// The child runs as `pid`: its lines are read from now on.
    private func started(pid: Int32, session: SessionID?, app: AppID) {
        guard let output, let pipes else { return }
        close(pipes.stdout.write)
        close(pipes.stderr.write)
        output.follow(pipes.stdout.read, stream: .stdout, pid: pid, session: session, app: app)
        output.follow(pipes.stderr.read, stream: .stderr, pid: pid, session: session, app: app)
    }

    /// The child did not start: every end closes.
    private func failed() {
        guard let pipes else { return }
        for fd in [pipes.stdout.read, pipes.stdout.write, pipes.stderr.read, pipes.stderr.write] { close(fd) }
    }
}
