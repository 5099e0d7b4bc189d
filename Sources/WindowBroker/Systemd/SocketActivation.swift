import CLinuxShim
import CSystemd
import Foundation
import Glibc
import IPCWire

/// Socket activation: the listening socket systemd (or `systemd-socket-activate`) passed.
public enum SocketActivation {
    public static let controlName = "control"

    /// The passed listening Unix stream socket named `control` (or the only one passed, if it is
    /// unnamed), or nil when none was passed. The LISTEN_* variables are removed either way.
    public static func controlSocket() throws -> Int32? {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else {
            if count < 0 { throw BrokerError(.internalError, "sd_listen_fds failed: \(String(cString: strerror(-count)))") }
            return nil
        }
        defer {
            if let names {
                for i in 0..<Int(count) { free(names[i]) }
                free(names)
            }
        }
        let start = SD_LISTEN_FDS_START
        var chosen: Int32?
        for i in 0..<count {
            let name = names?[Int(i)].map { String(cString: $0) } ?? "unknown"
            let fd = start + i
            if name == controlName || (count == 1 && name == "unknown") { chosen = fd }
        }
        guard let fd = chosen else {
            throw BrokerError(.invalidRequest, "systemd passed \(count) socket(s) but none named '\(controlName)' (FileDescriptorName=\(controlName))")
        }
        guard sd_is_socket_unix(fd, wb_sock_stream(), 1, nil, 0) > 0 else {
            throw BrokerError(.invalidRequest, "the socket passed as '\(controlName)' is not a listening Unix stream socket")
        }
        // Workers must not inherit it (spawning closes fds above 3 anyway; this covers exec of anything else).
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        return fd
    }
}
