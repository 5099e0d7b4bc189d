import Foundation
import Glibc
import IPCWire

/// A plain blocking Unix-socket client for sending exactly the bytes a test wants, including
/// garbage, and reading what the broker answers.
final class RawSocket {
    let fd: Int32

    convenience init(path: String, receiveTimeout: TimeInterval = 10) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let rc = withUnixAddress(path) { connect(fd, $0, $1) }
        guard rc == 0 else { close(fd); throw HarnessError("connect(\(path)) failed: errno \(errno)") }
        self.init(adopting: fd, receiveTimeout: receiveTimeout)
    }

    /// Takes over a connected descriptor (a test playing the broker's side of a socket).
    init(adopting fd: Int32, receiveTimeout: TimeInterval = 10) {
        self.fd = fd
        var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Writes all bytes; returns false when the peer has closed.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    func write(frame envelope: Envelope) throws {
        write(try Self.frame(envelope))
    }

    /// `envelope` as it goes on the wire: its length, then its bytes (several can be written
    /// in one go).
    static func frame(_ envelope: Envelope) throws -> [UInt8] {
        let body: [UInt8] = try envelope.serializedBytes()
        return header(body.count) + body
    }

    static func header(_ length: Int) -> [UInt8] {
        let n = UInt32(length)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
    }

    private func readExactly(_ count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let n = buffer[offset...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            offset += n
        }
        return buffer
    }

    /// Reads one frame; nil when the connection closed (or nothing came within the timeout).
    func readFrame() -> Envelope? {
        guard let header = readExactly(4) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard let body = readExactly(length) else { return nil }
        return try? Envelope(serializedBytes: body)
    }

    /// True when the broker has closed its end, found without reading anything: a test of a
    /// client that does not read must not become a reader while it waits.
    func peerHasClosed() -> Bool {
        // POLLRDHUP (0x2000): the peer shut down its writing; a closed Unix socket also hangs up.
        var descriptor = pollfd(fd: fd, events: Int16(0x2000), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        return descriptor.revents & Int16(0x2000 | POLLHUP) != 0
    }

    /// True when the broker has closed its end (read returns 0 after any pending frames).
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, 0)
            if n == 0 { return true }
            // A peer that closes with our bytes still unread in its buffer resets the connection.
            if n < 0 { return errno == ECONNRESET }
        }
    }

    static func hello(version: UInt32 = WireProtocol.version, kind: Windowbroker_V1_PeerKind = .control) -> Envelope {
        .with {
            $0.id = 1
            $0.hello = .with {
                $0.protocolVersion = version
                $0.peerKind = kind
                $0.clientName = "raw-test"
            }
        }
    }

    /// Says Hello and checks for Welcome.
    func greet() throws {
        try write(frame: Self.hello())
        guard case .welcome? = readFrame()?.body else { throw HarnessError("no Welcome") }
    }
}

/// posix_spawn without Foundation's child watching; output (stdout and stderr) to a file.
func spawnProcess(_ path: String, arguments: [String], environment: [String: String], output: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
    guard rc == 0 else { throw HarnessError("posix_spawn(\(path)) failed: \(rc)") }
    return pid
}

/// Calls `body` with `path` as a `sockaddr_un` (for bind/connect).
func withUnixAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        buffer.copyBytes(from: Array(path.utf8.prefix(buffer.count - 1)) + [0])
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// Runs a program to completion; its exit status and what it wrote (stdout and stderr together).
func runToCompletion(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (code: Int32, output: String) {
    let process = WaitableProcess()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}

/// A `Process` whose end is noticed at once. Foundation's `waitUntilExit` on Linux sees an
/// exit only at its run loop's next 50 ms turn; the suite runs thousands of wmctl processes,
/// and that wait was most of its time. The termination handler runs as soon as the process is
/// reaped (its status already set), so waiting on it costs about a millisecond.
final class WaitableProcess: Process, @unchecked Sendable {
    private let exited = DispatchSemaphore(value: 0)

    override init() {
        super.init()
        terminationHandler = { [exited] _ in exited.signal() }
    }

    /// Returns once the process has ended (at once when it has already).
    override func waitUntilExit() {
        exited.wait()
        exited.signal()  // a later wait returns at once too
    }
}
