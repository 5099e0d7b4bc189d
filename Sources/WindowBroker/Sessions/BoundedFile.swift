import Foundation
import Glibc
import IPCWire

/// Every file the broker reads is read through here, at most `limit` bytes: a picture, a
/// manifest or a configuration file replaced by a huge (or endless) one is a clear error, not
/// the broker's memory. The size is checked on the open file, then no more than the limit is
/// read, so a file that grows between the two is refused too.
public enum BoundedFile {
    /// The file's contents; `what` names it in the error ("the snapshot", "the manifest").
    public static func read(_ path: String, limit: Int, what: String, followLinks: Bool = true) throws(BrokerError) -> Data {
        // O_NONBLOCK: a FIFO put in a file's place would block the open until someone writes.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            throw BrokerError(.invalidState, "\(what) \(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw BrokerError(.invalidState, "\(what) \(path) is not a regular file")
        }
        guard info.st_size <= limit else {
            throw BrokerError(.payloadTooLarge, "\(what) \(path) is \(info.st_size) bytes; at most \(limit) are read")
        }
        // One byte past the limit is read, to see a file that grew since fstat.
        var bytes = [UInt8](repeating: 0, count: min(Int(info.st_size), limit) + 1)
        var count = 0
        while true {
            if count == bytes.count {
                guard count <= limit else { throw BrokerError(.payloadTooLarge, "\(what) \(path) grew past \(limit) bytes while it was read") }
                bytes.append(contentsOf: repeatElement(0, count: min(64 << 10, limit + 1 - count)))
            }
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw BrokerError(.internalError, "\(what) \(path) cannot be read: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            count += n
        }
        return Data(bytes[0..<count])
    }
}
