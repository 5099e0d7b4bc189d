import Foundation
import XCTest

/// A dbus-daemon of the test's own (never the system's or the user's), killed by its pid at
/// the end. Its policy lets any user connect, as a bus whose socket others can reach does:
/// what keeps another user out is the broker's own check.
final class PrivateBus {
    let root: String
    let address: String
    private let process: Process

    static var available: Bool {
        ["dbus-daemon", "dbus-send", "busctl"].allSatisfy { FileManager.default.isExecutableFile(atPath: "/usr/bin/" + $0) }
    }

    /// `root`: where its socket is (a bus started again at the same address); `asNobody`: the
    /// daemon runs as uid 65534, as another user's bus would.
    init(root given: String? = nil, asNobody: Bool = false) throws {
        guard Self.available else { throw XCTSkip("dbus-daemon, dbus-send and busctl are not installed (make test installs them)") }
        root = given ?? FileManager.default.temporaryDirectory.appendingPathComponent("wb-bus-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, asNobody ? 0o777 : 0o755)
        let socket = root + "/bus"
        address = "unix:path=" + socket
        let config = root + "/bus.conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(toFile: config, atomically: true, encoding: .utf8)
        process = WaitableProcess()
        let daemon = ["/usr/bin/dbus-daemon", "--config-file=\(config)", "--nofork", "--nopidfile", "--nosyslog"]
        if asNobody {
            chmod(config, 0o644)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups"] + daemon
        } else {
            process.executableURL = URL(fileURLWithPath: daemon[0])
            process.arguments = Array(daemon.dropFirst())
        }
        let log = root + "/dbus.log"
        try process.run(output: log)
        if process.waitUntil(timeout: 10, { FileManager.default.fileExists(atPath: socket) }) {
            chmod(socket, 0o777)
            return
        }
        stop()
        throw HarnessError("dbus-daemon did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    func stop() {
        process.terminateAndWait()
        try? FileManager.default.removeItem(atPath: root)
    }
}
