import CSessionBus
import Foundation
import Glibc
import IPCWire
import Synchronization

/// The one thread that owns the sd-bus connection: it dispatches incoming calls (sd-bus runs
/// the callbacks on it), and runs the work other tasks hand it (replies, signals) in the order
/// it was handed over. It sleeps in poll(2) on the bus and on an eventfd that `enqueue` rings.
final class BusThread: Sendable {
    /// What the C layer asks the Swift side, on this thread.
    struct Callbacks: Sendable {
        var method: @Sendable (_ call: OpaquePointer, _ path: String, _ member: String) -> Int32
        var property: @Sendable (_ reply: OpaquePointer, _ path: String, _ name: String) -> Int32
        var exists: @Sendable (_ path: String) -> Bool
        var enumerate: @Sendable () -> [String]
    }

    private struct State {
        var work: [@Sendable (OpaquePointer) -> Void] = []
        var stopping = false
        /// Connected and serving; who waits for the connection's end (`ended`).
        var serving = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let wake: Int32 = wb_bus_wakeup_fd()

    /// Connects, exports the objects and takes the name, then serves on a thread of its own.
    /// Throws when there is no bus, it is another user's, or the name is taken. May be called
    /// again once the connection has ended (`ended`).
    func start(address: String?, callbacks: Callbacks) async throws {
        state.withLock { $0 = State() }
        try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
            Thread.detachNewThread { [self] in
                nameThisThread("wb-dbus")
                self.serve(address: address, callbacks: callbacks, started: started)
            }
        }
    }

    /// Runs `work` on the bus thread, after everything handed over before it.
    func enqueue(_ work: @escaping @Sendable (OpaquePointer) -> Void) {
        let accepted = state.withLock { state in
            guard !state.stopping else { return false }
            state.work.append(work)
            return true
        }
        if accepted { ring() }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        ring()
    }

    /// Returns once the connection started last has ended: stopped, or the bus went away.
    func ended() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.serving { state.waiting.append(waiter) }
                return !state.serving
            }
            if now { waiter.resume() }
        }
    }

    private func ring() {
        var one: UInt64 = 1
        _ = Glibc.write(wake, &one, 8)
    }

    private func serve(address: String?, callbacks: Callbacks, started: CheckedContinuation<Void, any Error>) {
        var bus: OpaquePointer?
        var r = address.map { wb_bus_open(&bus, $0) } ?? wb_bus_open(&bus, nil)
        guard r >= 0, let bus else {
            started.resume(throwing: BrokerError(.brokerUnreachable, "cannot connect to the session bus: \(String(cString: strerror(-r)))"))
            return
        }
        defer { sd_bus_flush_close_unref(bus) }
        // Everyone on a bus sees the broker's signals and can introspect it: only a bus the
        // broker's own user runs is one to tell every session's title, id and pid.
        var owner: uid_t = 0
        r = wb_bus_owner_uid(bus, &owner)
        guard r >= 0, owner == geteuid() else {
            let who = r >= 0 ? "is run by uid \(owner), not by this user (uid \(geteuid()))" : "does not say who runs it (\(String(cString: strerror(-r))))"
            started.resume(throwing: BrokerError(.permissionDenied, "the session bus \(address ?? "of the user") \(who): other users on it would see every session's title, id and pid"))
            return
        }
        // Lives as long as the connection: sd-bus hands it back to every callback.
        let box = Unmanaged.passRetained(CallbackBox(callbacks))
        defer { box.release() }
        // sd-bus keeps this pointer as every object's userdata: it stays put until the bus is closed.
        let table = UnsafeMutablePointer<wb_bus_callbacks>.allocate(capacity: 1)
        defer { table.deallocate() }
        table.initialize(to: wb_bus_callbacks(
            context: box.toOpaque(),
            method: { context, call, path, member in
                guard let context, let call, let path, let member else { return -EINVAL }
                return Unmanaged<CallbackBox>.fromOpaque(context).takeUnretainedValue().callbacks
                    .method(call, String(cString: path), String(cString: member))
            },
            property: { context, reply, path, name in
                guard let context, let reply, let path, let name else { return -EINVAL }
                return Unmanaged<CallbackBox>.fromOpaque(context).takeUnretainedValue().callbacks
                    .property(reply, String(cString: path), String(cString: name))
            },
            exists: { context, path in
                guard let context, let path else { return 0 }
                return Unmanaged<CallbackBox>.fromOpaque(context).takeUnretainedValue().callbacks.exists(String(cString: path)) ? 1 : 0
            },
            enumerate: { context in
                guard let context else { return nil }
                let paths = Unmanaged<CallbackBox>.fromOpaque(context).takeUnretainedValue().callbacks.enumerate()
                // A strv, which sd-bus frees: a malloc'd, NULL-terminated array of strdup'd strings.
                guard let memory = malloc(MemoryLayout<UnsafeMutablePointer<CChar>?>.stride * (paths.count + 1)) else { return nil }
                let strv = memory.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: paths.count + 1)
                for (i, path) in paths.enumerated() { strv[i] = strdup(path) }
                strv[paths.count] = nil
                return strv
            }))
        r = wb_bus_export(bus, table)
        guard r >= 0 else {
            let why = r == -EEXIST ? "another process owns \(WB_BUS_NAME)" : String(cString: strerror(-r))
            started.resume(throwing: BrokerError(.resourceExhausted, "cannot serve \(WB_BUS_NAME): \(why)"))
            return
        }
        state.withLock { $0.serving = true }
        started.resume()
        loop(bus)
        // Gone (stopped, or the bus went away): what is handed over from now on is dropped.
        let waiting = state.withLock { state in
            state.stopping = true
            state.work = []
            state.serving = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.resume() }
    }

    private func loop(_ bus: OpaquePointer) {
        while true {
            var r: Int32
            repeat { r = sd_bus_process(bus, nil) } while r > 0
            if r < 0 { return }  // the bus went away: the face is gone, the broker goes on
            let (work, stopping) = state.withLock { state in
                defer { state.work = [] }
                return (state.work, state.stopping)
            }
            for item in work { item(bus) }
            if stopping { return }
            if !work.isEmpty { continue }  // replies and signals may have made more to process
            var descriptors = [
                pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&descriptors, 2, Self.timeout(bus))
            if descriptors[1].revents != 0 {
                var count: UInt64 = 0
                _ = Glibc.read(wake, &count, 8)
            }
        }
    }

    /// sd-bus's next deadline (absolute, CLOCK_MONOTONIC) as poll's relative milliseconds.
    private static func timeout(_ bus: OpaquePointer) -> Int32 {
        var until: UInt64 = 0
        guard sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max else { return -1 }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        guard until > nowMicroseconds else { return 0 }
        return Int32(min(UInt64(Int32.max), (until - nowMicroseconds + 999) / 1000))
    }

    deinit {
        close(wake)
    }
}

private final class CallbackBox: Sendable {
    let callbacks: BusThread.Callbacks
    init(_ callbacks: BusThread.Callbacks) { self.callbacks = callbacks }
}
