import Foundation
import XCTest

/// The broker on D-Bus (issue 21): `org.windowbroker.Broker1` on a private dbus-daemon the
/// test starts, used with busctl as any desktop service is.
final class SessionBusTests: XCTestCase {
    private var bus: PrivateBus!
    private var harness: BrokerHarness!

    override func setUpWithError() throws {
        bus = try PrivateBus()
        harness = try BrokerHarness()
        harness.brokerEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        try harness.start()
        try harness.eventually("the broker is on the bus") { harness.brokerLog.contains("on the D-Bus session bus") }
    }

    override func tearDown() {
        harness?.tearDown()
        bus?.stop()
    }

    private func busctl(_ arguments: String...) -> BrokerHarness.Result {
        harness.run("/usr/bin/busctl", ["--address=\(bus.address)"] + arguments)
    }

    private func call(_ path: String, _ interface: String, _ method: String, _ arguments: String...) -> BrokerHarness.Result {
        harness.run("/usr/bin/busctl", ["--address=\(bus.address)", "call", "org.windowbroker.Broker1", path, interface, method] + arguments)
    }

    private func property(_ path: String, _ name: String) -> String {
        busctl("get-property", "org.windowbroker.Broker1", path, "org.windowbroker.Session1", name).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func sessionID(ofPath path: String) -> String {
        String(path.split(separator: "/").last ?? "").replacingOccurrences(of: "_", with: "-")
    }

    func testIntrospectOpenWatchAndCloseWithBusctl() throws {
        let root = "/org/windowbroker/Broker1"
        let introspected = busctl("introspect", "org.windowbroker.Broker1", root)
        XCTAssertEqual(introspected.code, 0, introspected.stderr)
        for member in [".Open", ".KeySession", ".Version", ".Event", "org.freedesktop.DBus.ObjectManager"] {
            XCTAssertTrue(introspected.stdout.contains(member), "\(member) in \(introspected.stdout)")
        }

        // Open: the reply is the new session's object, and wmctl sees the same session.
        let opened = call(root, "org.windowbroker.Broker1", "Open", "s", "notes")
        XCTAssertEqual(opened.code, 0, opened.stderr)
        let path = try XCTUnwrap(opened.stdout.split(separator: "\"").dropFirst().first.map(String.init), opened.stdout)
        let session = Self.sessionID(ofPath: path)
        XCTAssertEqual(try harness.state(session), "foregroundActive")
        XCTAssertTrue(busctl("tree", "org.windowbroker.Broker1").stdout.contains(path))
        XCTAssertEqual(property(path, "State"), "s \"foregroundActive\"")
        XCTAssertEqual(property(path, "AppId"), "s \"notes\"")
        XCTAssertEqual(property(path, "Id"), "s \"\(session)\"")
        let pid = try XCTUnwrap(try harness.session(session)["pid"] as? Int)
        XCTAssertEqual(property(path, "Pid"), "u \(pid)")
        XCTAssertEqual(property(path, "IsKey"), "b true")
        let key = busctl("get-property", "org.windowbroker.Broker1", root, "org.windowbroker.Broker1", "KeySession").stdout
        XCTAssertEqual(key.trimmingCharacters(in: .whitespacesAndNewlines), "o \"\(path)\"")

        // State changes are PropertiesChanged and Event signals, as busctl monitor shows them.
        let monitor = try harness.start("/usr/bin/busctl", ["--address=\(bus.address)", "monitor", "org.windowbroker.Broker1"])
        defer { monitor.stop() }
        try harness.eventually("the monitor is listening") { monitor.errorOutput.contains("Monitoring bus message stream") }
        XCTAssertEqual(call(path, "org.windowbroker.Session1", "Background").code, 0)
        XCTAssertEqual(try harness.state(session), "background")
        try harness.eventually("PropertiesChanged with the new state") {
            monitor.output.contains("PropertiesChanged") && monitor.output.contains("\"background\"")
        }
        try harness.eventually("the Event signal") { monitor.output.contains("Member=Event") && monitor.output.contains("didEnterBackground") }
        XCTAssertEqual(property(path, "State"), "s \"background\"")
        // Reclaim saves it and takes its process; the session stays, with its object.
        XCTAssertEqual(call(path, "org.windowbroker.Session1", "Reclaim").code, 0)
        XCTAssertEqual(try harness.state(session), "unattached")
        XCTAssertEqual(property(path, "Pid"), "u 0")

        // Activate brings it back; Close discards it: the session and its object are gone.
        XCTAssertEqual(call(path, "org.windowbroker.Session1", "Activate").code, 0)
        XCTAssertEqual(try harness.state(session), "foregroundActive")
        XCTAssertEqual(call(path, "org.windowbroker.Session1", "Close").code, 0)
        XCTAssertFalse(try harness.jsonList("sessions").contains { $0["id"] as? String == session })
        try harness.eventually("the object is gone") { !self.busctl("tree", "org.windowbroker.Broker1").stdout.contains(path) }
        try harness.eventually("InterfacesRemoved") { monitor.output.contains("InterfacesRemoved") }

        // Errors are the broker's, named by code.
        let unknownApp = call(root, "org.windowbroker.Broker1", "Open", "s", "nosuch")
        XCTAssertNotEqual(unknownApp.code, 0)
        XCTAssertTrue(unknownApp.stderr.contains("no app 'nosuch'"), unknownApp.stderr)
        let gone = call(path, "org.windowbroker.Session1", "Activate")
        XCTAssertNotEqual(gone.code, 0)
        XCTAssertTrue(gone.stderr.lowercased().contains("unknown object") || gone.stderr.contains("UnknownObject"), gone.stderr)
    }

    /// What happens over the control socket reaches the bus too, a few milliseconds behind, in
    /// one batch after the open (`EventBatches`): the object first, then an `Event` signal for
    /// each of the open's events, in the order `wmctl watch` shows them.
    /// A launcher opens content, not only an app: the activity reaches the scene, as with wmctl.
    func testOpenActivityOpensTheNoteItNames() throws {
        let root = "/org/windowbroker/Broker1"
        XCTAssertTrue(busctl("introspect", "org.windowbroker.Broker1", root).stdout.contains(".OpenActivity"))
        let opened = call(root, "org.windowbroker.Broker1", "OpenActivity", "sssa{ss}", "notes", "notes.edit", "From the dock",
                          "2", "noteID", "dock", "text", "opened over D-Bus")
        XCTAssertEqual(opened.code, 0, opened.stderr)
        let path = try XCTUnwrap(opened.stdout.split(separator: "\"").dropFirst().first.map(String.init), opened.stdout)
        let session = Self.sessionID(ofPath: path)
        XCTAssertEqual(try harness.state(session), "foregroundActive")
        XCTAssertEqual(try harness.noteState(session).text, "opened over D-Bus")
        XCTAssertEqual(property(path, "Title"), "s \"From the dock\"")
        // An activity type the app never declared is the broker's error, by its code.
        let undeclared = call(root, "org.windowbroker.Broker1", "OpenActivity", "sssa{ss}", "notes", "mail.compose", "", "0")
        XCTAssertNotEqual(undeclared.code, 0)
        XCTAssertTrue(undeclared.stderr.contains("does not declare") || undeclared.stderr.contains("notes.edit"), undeclared.stderr)
    }

    func testChangesMadeOverTheControlSocketReachTheBusEventByEventInOrder() throws {
        let monitor = try harness.start("/usr/bin/busctl", ["--address=\(bus.address)", "monitor", "org.windowbroker.Broker1"])
        defer { monitor.stop() }
        try harness.eventually("the monitor is listening") { monitor.errorOutput.contains("Monitoring bus message stream") }
        let watch = try harness.startWatch([])
        defer { watch.stop() }
        let note = try harness.openNote("batched")
        let path = "/org/windowbroker/Broker1/session/" + note.replacingOccurrences(of: "-", with: "_")
        try harness.eventually("the open's last event on the bus") { monitor.output.contains("\"didBecomeKey\"") }
        XCTAssertEqual(property(path, "State"), "s \"foregroundActive\"")
        XCTAssertEqual(property(path, "IsKey"), "b true")

        let output = monitor.output
        let added = try XCTUnwrap(output.range(of: "InterfacesAdded")?.lowerBound, output)
        var last = added
        for event in ["created", "launched", "willConnect", "didBecomeActive", "didBecomeKey"] {
            let found = try XCTUnwrap(output.range(of: "\"\(event)\"", range: last..<output.endIndex), "\(event) after the previous ones in \(output)")
            last = found.upperBound
        }
        let signals = output.components(separatedBy: "Member=Event").count - 1
        try harness.eventually("the watch saw the same events") { watch.output.contains(note) && watch.output.contains("didBecomeKey") }
        let watched = watch.output.split(separator: "\n").filter { $0.contains(note) }.count
        XCTAssertEqual(signals, watched, "one Event signal per event: \(output)\n\(watch.output)")
    }

    func testAnotherUserIsRefusedAndChangesNothing() throws {
        try XCTSkipIf(getuid() != 0, "running a client as another user (setpriv) needs root")
        let note = try harness.openNote("mine")
        let path = "/org/windowbroker/Broker1/session/" + note.replacingOccurrences(of: "-", with: "_")
        let root = "/org/windowbroker/Broker1"
        let asNobody = { (arguments: [String]) in
            self.harness.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/busctl", "--address=\(self.bus.address)"] + arguments)
        }
        // dbus-send prints the error's name and message (busctl only the errno's text).
        let open = harness.run("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply",
            "--dest=org.windowbroker.Broker1", root, "org.windowbroker.Broker1.Open", "string:notes",
        ])
        XCTAssertNotEqual(open.code, 0)
        XCTAssertTrue(open.stderr.contains("org.freedesktop.DBus.Error.AccessDenied: only uid \(getuid()) may use the broker (the caller is uid 65534)"), open.stderr)
        let close = asNobody(["call", "org.windowbroker.Broker1", path, "org.windowbroker.Session1", "Close"])
        XCTAssertNotEqual(close.code, 0)
        let title = asNobody(["get-property", "org.windowbroker.Broker1", path, "org.windowbroker.Session1", "Title"])
        XCTAssertNotEqual(title.code, 0, title.stdout)
        XCTAssertEqual(try harness.jsonList("sessions").count, 1, "nothing opened, nothing closed")
        XCTAssertEqual(try harness.state(note), "foregroundActive")
    }
}

/// Without a session bus the broker serves on, and says so once.
final class NoSessionBusTests: BrokerTestCase {
    func testTheBrokerRunsWithoutABusAndSaysSoOnce() throws {
        XCTAssertEqual(try harness.state(try harness.openNote("fine")), "foregroundActive")
        try harness.eventually("the notice") { harness.brokerLog.contains("no D-Bus session bus") }
        XCTAssertEqual(harness.brokerLog.components(separatedBy: "no D-Bus session bus").count - 1, 1)
    }
}

/// Issue 67 item 10: a scene and the programs it starts speak as that scene on every door.
/// Before: a program a scene of one app started closed another app's session through the
/// control socket (`wmctl close`) and through the bus (`Session1.Close`); only the scene's own
/// fd 3 kept it to its app.
extension SessionBusTests {
    private func run(from scene: String, _ program: String, _ arguments: [String]) throws -> (status: Int, output: String) {
        let reply = try harness.json(["send", scene, "run", "--arg", "program=\(program)", "--arg", "args=\(arguments.joined(separator: " "))"])
        let result = reply["value"] as? [String: Any] ?? reply
        return (result["status"] as? Int ?? -1, result["output"] as? String ?? "\(reply)")
    }

    func testAProgramASceneStartedActsAsThatSceneOnTheControlSocketAndTheBus() throws {
        try harness.installNotes(as: "other", [:])
        let victim = try harness.openNote("victim")
        let intruder = try harness.openNote("intruder", app: "other")
        let wmctl = BrokerHarness.binDirectory + "/wmctl"

        let path = "/org/windowbroker/Broker1/session/" + victim.replacingOccurrences(of: "-", with: "_")
        let viaBus = try run(from: intruder, "/usr/bin/busctl", ["--address=\(bus.address)", "call", "org.windowbroker.Broker1", path, "org.windowbroker.Session1", "Close"])
        XCTAssertNotEqual(viaBus.status, 0, viaBus.output)
        XCTAssertNotNil(try? harness.session(victim), "not closed through the bus")

        let closed = try run(from: intruder, wmctl, ["--socket", harness.socketPath, "close", victim])
        XCTAssertNotEqual(closed.status, 0, closed.output)
        XCTAssertTrue(closed.output.contains("no session \(victim)"), "answered as a scene of 'other' is: \(closed.output)")
        XCTAssertNotNil(try? harness.session(victim), "not closed through the control socket")
        let listed = try run(from: intruder, wmctl, ["--socket", harness.socketPath, "sessions"])
        XCTAssertNotEqual(listed.status, 0, "the switcher's list is for wmctl, not for scenes: \(listed.output)")

        // The user's own wmctl is not a scene's.
        XCTAssertEqual(harness.wmctl("close", victim).code, 0)
    }
}

/// Issue 67 items 14 and 11: the bus going away and coming back, and a bus another user runs.
final class SessionBusLifeTests: XCTestCase {
    private var bus: PrivateBus?
    private var harness: BrokerHarness!

    override func tearDown() {
        harness?.tearDown()
        bus?.stop()
    }

    private func startBroker(on bus: PrivateBus) throws {
        self.bus = bus
        harness = try BrokerHarness()
        harness.brokerEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        try harness.start()
    }

    /// Before: after the bus daemon died, the face never came back and nothing was logged.
    func testTheFaceSaysTheBusWentAwayAndComesBackWithIt() throws {
        var bus = try PrivateBus()
        try startBroker(on: bus)
        try harness.eventually("the broker is on the bus") { harness.brokerLog.contains("on the D-Bus session bus") }
        let root = bus.root
        bus.stop()
        try harness.eventually("the loss is logged") { harness.brokerLog.contains("the D-Bus session bus went away") }
        bus = try PrivateBus(root: root)
        self.bus = bus
        try harness.eventually("back on the bus", timeout: 60) { harness.brokerLog.contains("on the D-Bus session bus again") }
        let opened = harness.run("/usr/bin/busctl", ["--address=\(bus.address)", "call", "org.windowbroker.Broker1",
                                                     "/org/windowbroker/Broker1", "org.windowbroker.Broker1", "Open", "s", "notes"])
        XCTAssertEqual(opened.code, 0, opened.stderr)
    }

    /// Before: on a bus that another user's daemon runs (and admits everyone), the broker
    /// exported every session's title, id and pid to all of them.
    func testABusAnotherUserRunsIsNotServedAndStatusSaysWhy() throws {
        guard getuid() != 65534 else { throw XCTSkip("the test runs as nobody already") }
        let bus = try PrivateBus(asNobody: true)
        try startBroker(on: bus)
        try harness.eventually("the refusal is logged") { harness.brokerLog.contains("no D-Bus session bus") }
        XCTAssertTrue(harness.brokerLog.contains("is run by uid 65534"), String(harness.brokerLog.suffix(2000)))
        let warnings = try XCTUnwrap(try harness.json("status")["warnings"] as? [String])
        XCTAssertTrue(warnings.contains { $0.hasPrefix("no D-Bus face:") }, "\(warnings)")
        let names = harness.run("/usr/bin/busctl", ["--address=\(bus.address)", "list"])
        XCTAssertFalse(names.stdout.contains("org.windowbroker.Broker1"), names.stdout)
    }
}
