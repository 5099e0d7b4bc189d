import CSessionBus
import Foundation
import Glibc
import IPCWire
import Logging
import ServiceLifecycle
import Synchronization

/// The broker as desktop shells, panels and docks see it: `org.windowbroker.Broker1` on the
/// D-Bus session bus. One object per session under `/org/windowbroker/Broker1/session/` with
/// `org.freedesktop.DBus.Properties` (Title, State, IsKey, Pid, ... with PropertiesChanged),
/// Activate/Background/Close; the broker object with Open, KeySession and an `Event` signal
/// for what `wmctl watch` shows; an object manager; Introspect from sd-bus. Calls go through
/// the same request handling as the control socket (validation, the drain, the errors), and
/// only the broker's own user may call (checked per call in `CSessionBus`).
///
/// sd-bus is not thread-safe: one thread owns the connection and does everything on it
/// (`BusThread`). Property reads are answered there from a copy of the sessions' properties
/// that the broker's events keep current; method calls become control requests answered on
/// the broker, whose replies go back to that thread.
final class SessionBusFace: Sendable {
    /// What a session object shows.
    struct SessionProperties: Equatable, Sendable {
        var id: String
        var appID: String
        var title: String
        var state: String
        var isKey: Bool
        var pid: UInt32
        var hasSnapshot: Bool

        init(_ status: SessionStatus) {
            id = status.session.id.description
            appID = status.session.appID.rawValue
            title = status.session.title
            state = status.session.state.rawValue
            isKey = status.isKey
            pid = UInt32(clamping: status.pid ?? 0)
            hasSnapshot = status.hasSnapshot
        }

        /// The properties that differ from `old`, by their D-Bus names.
        func changed(from old: SessionProperties) -> [String] {
            var names: [String] = []
            if title != old.title { names.append("Title") }
            if state != old.state { names.append("State") }
            if isKey != old.isKey { names.append("IsKey") }
            if pid != old.pid { names.append("Pid") }
            if hasSnapshot != old.hasSnapshot { names.append("HasSnapshot") }
            return names
        }
    }

    static let path = WB_BUS_PATH
    static let sessionsPath = WB_BUS_SESSIONS

    /// A session's object path: its id with `_` for `-` (path elements allow no dashes).
    static func path(of id: String) -> String {
        sessionsPath + "/" + id.replacingOccurrences(of: "-", with: "_")
    }

    static func sessionID(ofPath path: String) -> String? {
        guard path.hasPrefix(sessionsPath + "/") else { return nil }
        return String(path.dropFirst(sessionsPath.count + 1)).replacingOccurrences(of: "_", with: "-")
    }

    private let broker: Broker
    private let logger: Logger
    /// The sessions' properties by object path, as the bus thread answers them.
    private let sessions = Mutex<[String: SessionProperties]>([:])
    private let thread: BusThread
    /// What the bus thread is to say, in order: the broker's events, 15 ms after the first of
    /// a batch (`EventBatches`: an open's ten events come to the bus after the open), and the
    /// replies to method calls, at once (straight to the bus thread when nothing is pending).
    private let pending: EventBatches<Pending>

    enum Pending: Sendable {
        case event(EventRecord)
        /// Sends a method call's reply; run on the bus thread.
        case reply(@Sendable () -> Void)
    }

    init(broker: Broker, logger: Logger) {
        self.broker = broker
        self.logger = logger
        self.thread = BusThread()
        self.pending = EventBatches(window: .milliseconds(15), on: broker.requestLoop)
    }

    /// Connects and serves until cancelled. Without a session bus (or on one another user
    /// runs) the broker runs on without this face and says so once; it tries again with
    /// backoff, and when the bus goes away it says so and connects again when it is back.
    func run(address: String?) async {
        let face = self
        let callbacks = BusThread.Callbacks(
            method: { call, path, member in face.method(call, path: path, member: member) },
            property: { reply, path, name in face.property(reply, path: path, name: name) },
            exists: { path in face.sessions.withLock { $0[path] != nil } },
            enumerate: { face.sessions.withLock { Array($0.keys).sorted() } })
        let subscription = await broker.subscribe(batching: pending) { .event($0) }
        // Events keep the objects current while connected; while not, the bus thread drops them.
        let follower = Task { for await batch in pending { await follow(batch) } }
        defer {
            follower.cancel()
            Task { [broker] in await broker.unsubscribe(subscription) }
        }
        await withTaskCancellationHandler {
            var delay = Self.firstRetry
            var (failures, connectedBefore) = (0, false)
            while !Task.isCancelled {
                // The sessions as they are now, before the name is taken: nothing asks for an
                // object that is not there yet.
                let current = await broker.sessionStatuses(app: nil).map(SessionProperties.init)
                sessions.withLock { sessions in
                    sessions = [:]
                    for properties in current { sessions[Self.path(of: properties.id)] = properties }
                }
                do {
                    try await thread.start(address: address, callbacks: callbacks)
                } catch {
                    let reason = (error as? BrokerError)?.message ?? "\(error)"
                    if failures == 0 {
                        logger.notice("no D-Bus session bus; the broker runs without its D-Bus face (org.windowbroker.Broker1)", metadata: [
                            "reason": "\(reason)", "retry": "with backoff, up to every \(Self.lastRetry.formattedSeconds)",
                        ])
                        if let problem = error as? BrokerError, problem.code == .permissionDenied { await broker.noteBusProblem(reason) }
                    }
                    failures += 1
                    try? await WireRuntime.sleep(for: delay)
                    delay = min(delay * 2, Self.lastRetry)
                    continue
                }
                await broker.noteBusProblem(nil)
                logger.info(connectedBefore ? "on the D-Bus session bus again" : "on the D-Bus session bus", metadata: ["name": "\(WB_BUS_NAME)"])
                (failures, connectedBefore, delay) = (0, true, Self.firstRetry)
                await thread.ended()
                guard !Task.isCancelled else { break }
                logger.warning("the D-Bus session bus went away; the broker's D-Bus face is gone until it is back", metadata: [
                    "retry": "with backoff, up to every \(Self.lastRetry.formattedSeconds)",
                ])
            }
        } onCancel: {
            thread.stop()
        }
    }

    /// The waits between attempts to connect: doubling from the first to the last.
    static let firstRetry: Duration = .milliseconds(500)
    static let lastRetry: Duration = .seconds(30)

    /// Keeps the session objects in step with a batch of events, forwards each as `Event`, and
    /// sends the method replies among them in their place: a reply leaves after the objects
    /// and signals of everything that happened before its answer.
    private func follow(_ batch: [Pending]) async {
        // Each session's properties as they are now, read once for all its events.
        var now: [SessionID: SessionProperties] = [:]
        var read: Set<SessionID> = []
        for case .event(let record) in batch {
            guard let id = record.session, read.insert(id).inserted else { continue }
            now[id] = (try? await broker.sessionStatus(id)).map(SessionProperties.init)
        }
        let properties = now
        thread.enqueue { [self] bus in
            for item in batch {
                switch item {
                case .event(let record): apply(record, now: record.session.flatMap { properties[$0] }, on: bus)
                case .reply(let send): send()
                }
            }
        }
    }

    /// One event on the bus thread: the session's object added, changed or removed, then
    /// the `Event` signal. A session's later events in a batch find it changed already.
    private func apply(_ record: EventRecord, now: SessionProperties?, on bus: OpaquePointer) {
        let path = record.session.map { Self.path(of: $0.description) } ?? "/"
        if path != "/" {
            let before = sessions.withLock { $0[path] }
            switch (before, now) {
            case (nil, let now?):
                sessions.withLock { $0[path] = now }
                _ = wb_bus_emit_added(bus, path)
            case (let before?, let now?):
                sessions.withLock { $0[path] = now }
                for name in now.changed(from: before) {
                    _ = wb_bus_emit_changed(bus, path, WB_BUS_SESSION_INTERFACE, name)
                }
                if now.isKey != before.isKey { _ = wb_bus_emit_changed(bus, Self.path, WB_BUS_BROKER_INTERFACE, "KeySession") }
            case (let before?, nil):
                // Announced while it still answers (sd-bus reads its interfaces), then gone.
                _ = wb_bus_emit_removed(bus, path)
                sessions.withLock { $0[path] = nil }
                if before.isKey { _ = wb_bus_emit_changed(bus, Self.path, WB_BUS_BROKER_INTERFACE, "KeySession") }
            case (nil, nil):
                break
            }
        }
        _ = wb_bus_emit_event(bus, path, record.event.name, record.event.detail)
    }

    // MARK: - On the bus thread

    private func property(_ reply: OpaquePointer, path: String, name: String) -> Int32 {
        if path == Self.path {
            switch name {
            case "Version": return wb_bus_append_string(reply, WireProtocol.versionLine)
            default:
                let key = sessions.withLock { $0.first { $0.value.isKey }?.key }
                return wb_bus_append_object(reply, key ?? "/")
            }
        }
        guard let session = sessions.withLock({ $0[path] }) else { return -ENOENT }
        switch name {
        case "Id": return wb_bus_append_string(reply, session.id)
        case "AppId": return wb_bus_append_string(reply, session.appID)
        case "Title": return wb_bus_append_string(reply, session.title)
        case "State": return wb_bus_append_string(reply, session.state)
        case "IsKey": return wb_bus_append_bool(reply, session.isKey ? 1 : 0)
        case "Pid": return wb_bus_append_uint32(reply, session.pid)
        case "HasSnapshot": return wb_bus_append_bool(reply, session.hasSnapshot ? 1 : 0)
        default: return -ENOENT
        }
    }

    /// A method call becomes the control request `wmctl` would send; the reply (or the
    /// broker's error, as `org.windowbroker.Broker1.Error.<code>`) goes back from the bus thread,
    /// behind the signals of what happened before the answer (an opened session's object is
    /// there when the caller hears of it).
    private func method(_ call: OpaquePointer, path: String, member: String) -> Int32 {
        let request: ControlRequest
        switch (path, member) {
        case (Self.path, "Open"):
            var app: UnsafePointer<CChar>?
            let r = wb_bus_read_string(call, &app)
            guard r >= 0, let app else { return r < 0 ? r : -EINVAL }
            request = .open(.with { $0.appID = String(cString: app) })
        case (Self.path, "OpenActivity"):
            // A launcher's or a shell's open of content: the app, an activity type, its title
            // and string user info, as `wmctl open APP --activity T --title X --info K=V` sends.
            var strings: [String] = []
            for _ in 0..<3 {
                var value: UnsafePointer<CChar>?
                let r = wb_bus_read_string(call, &value)
                guard r >= 0, let value else { return r < 0 ? r : -EINVAL }
                strings.append(String(cString: value))
            }
            var info: [String: PlistValue] = [:]
            var r = wb_bus_enter_string_dictionary(call)
            guard r >= 0 else { return r }
            while true {
                var key: UnsafePointer<CChar>?, value: UnsafePointer<CChar>?
                r = wb_bus_read_string_pair(call, &key, &value)
                guard r >= 0 else { return r }
                guard r > 0, let key, let value else { break }
                info[String(cString: key)] = .string(String(cString: value))
            }
            r = wb_bus_exit_container(call)
            guard r >= 0 else { return r }
            request = .open(.with {
                $0.appID = strings[0]
                $0.activity = .with {
                    $0.activityType = strings[1]
                    $0.title = strings[2]
                    $0.userInfo = PlistValue.wire(dictionary: info)
                }
            })
        case (_, "Activate"), (_, "Background"), (_, "Reclaim"), (_, "Close"):
            guard let id = Self.sessionID(ofPath: path) else { return -ENOENT }
            switch member {
            case "Activate": request = .activate(.with { $0.sessionID = id })
            case "Background": request = .background(.with { $0.sessionID = id })
            case "Reclaim": request = .reclaim(.with { $0.sessionID = id })
            default: request = .close(.with { $0.sessionID = id })
            }
        default:
            return -EBADMSG
        }
        let message = BusMessage(call)
        let handler = ControlRequestHandler(broker: broker, logger: logger)
        let (pending, thread, broker) = (self.pending, self.thread, self.broker)
        // Asked now, on the bus thread, while the sender's connection is surely there.
        let sender = pid_t(wb_bus_sender_pid(call))
        Task {
            // A scene (or a process it started) acts as that scene here too: its own app only.
            let requester = await broker.scene(speakingFor: sender)
            let body = await handler.answer(request, from: requester)
            let send: @Sendable () -> Void = {
                switch body {
                case .controlReply(let reply):
                    if case .sessionState(let state) = reply.kind, member == "Open" || member == "OpenActivity" {
                        _ = wb_bus_reply_object(message.pointer, Self.path(of: state.sessionID))
                    } else {
                        _ = wb_bus_reply_empty(message.pointer)
                    }
                case .error(let wire):
                    let error = BrokerError(wire: wire)
                    let code = error.code.rawValue
                    let name = "org.windowbroker.Broker1.Error." + code.prefix(1).uppercased() + code.dropFirst()
                    _ = wb_bus_reply_error(message.pointer, name, error.message)
                default:
                    _ = wb_bus_reply_error(message.pointer, "org.freedesktop.DBus.Error.Failed", "the broker answered with something else")
                }
                message.release()
            }
            if pending.mayBypass(.reply(send)) { thread.enqueue { _ in send() } }
        }
        return 1
    }
}

/// A method call kept for its reply, which another task produces and the bus thread sends.
private struct BusMessage: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = sd_bus_message_ref(pointer)
    }

    func release() {
        sd_bus_message_unref(pointer)
    }
}

/// The session bus face as a service: connected (or trying to connect) until the group stops.
struct SessionBusService: Service {
    let face: SessionBusFace

    func run() async throws {
        let face = face
        await cancelWhenGracefulShutdown { await face.run(address: nil) }
    }
}
