import CLinuxShim
import Foundation
import Glibc

/// A test-owned NOTIFY_SOCKET: a datagram socket that records every sd_notify message with
/// the pid that sent it (SO_PASSCRED), as systemd sees them.
final class NotifyListener: @unchecked Sendable {
    struct Message {
        var text: String
        var senderPID: Int32
        var assignments: [String] { text.split(separator: "\n").map(String.init) }
    }

    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [Message] = []
    private var thread: Thread?
    private var stopped = false

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let rc = withUnixAddress(path) { bind(fd, $0, $1) }
        guard rc == 0, wb_enable_passcred(fd) == 0 else { throw HarnessError("cannot bind NOTIFY_SOCKET at \(path): errno \(errno)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [weak self] in self?.receiveLoop() }
        self.thread = thread
        thread.start()
    }

    private func receiveLoop() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !lock.withLock({ stopped }) {
            var pid: pid_t = 0
            let n = buffer.withUnsafeMutableBytes { wb_recv_with_pid(fd, $0.baseAddress, UInt($0.count), &pid) }
            guard n > 0 else { continue }
            let message = Message(text: String(decoding: buffer[0..<n], as: UTF8.self), senderPID: pid)
            lock.withLock { received.append(message) }
        }
    }

    var messages: [Message] { lock.withLock { received } }

    /// Waits for a message with an assignment starting with `assignment` (e.g. "READY=1"); returns it.
    @discardableResult
    func waitFor(_ assignment: String, after count: Int = 0, timeout: TimeInterval = 20) throws -> Message {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = messages.dropFirst(count).first(where: { $0.assignments.contains { $0.hasPrefix(assignment) } }) {
                return found
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw HarnessError("no \(assignment) on NOTIFY_SOCKET within \(timeout) s; got \(messages.map(\.text))")
    }

    func stop() {
        lock.withLock { stopped = true }
        // Wakes the receive loop now rather than at its 200 ms receive timeout: paid by every
        // process test, that wait was a good part of the suite's time.
        let waker = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        if waker >= 0 {
            var byte: UInt8 = 0
            _ = withUnixAddress(path) { Int32(truncatingIfNeeded: sendto(waker, &byte, 1, Int32(MSG_DONTWAIT), $0, $1)) }
            close(waker)
        }
        while thread?.isExecuting == true { Thread.sleep(forTimeInterval: 0.001) }
        close(fd)
        unlink(path)
    }
}
