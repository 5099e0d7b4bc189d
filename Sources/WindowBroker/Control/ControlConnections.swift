import Foundation
import IPCWire
import NIOCore

/// The open control connections, so that idle ones cannot lock everyone else out and a crowd
/// is queued, not refused: past the limit the broker stops accepting (the kernel's listen
/// backlog holds the next clients, as any server's) until a connection leaves, becomes a
/// watcher, or has been idle for `idleTimeout` (then it is closed to make room, never one in
/// the middle of a request or between two quick ones). Watchers (idle by design) are
/// counted against a limit of their own instead.
actor ControlConnections {
    /// A connection's number, in the order accepted (a UUID cost three system calls each).
    typealias ID = UInt64

    struct Entry {
        var channel: any Channel
        var lastActive: ContinuousClock.Instant
        var busy = 0
        var watching = false
    }

    private var entries: [ID: Entry] = [:]
    /// The accept loop, waiting for room.
    private var waitingForRoom: CheckedContinuation<Void, Never>?
    let limit: Int
    let watcherLimit: Int
    let idleTimeout: Duration
    private(set) var evicted = 0

    init(limit: Int, watcherLimit: Int, idleTimeout: Duration) {
        self.limit = max(1, limit)
        self.watcherLimit = max(1, watcherLimit)
        self.idleTimeout = idleTimeout
    }

    var requestConnections: Int { entries.values.filter { !$0.watching }.count }
    var watchers: Int { entries.values.filter(\.watching).count }

    /// Takes a new connection; when the table is full, first closes one idle for the idle
    /// timeout, or waits until there is room (the accept loop waits, so nothing more is
    /// accepted meanwhile). False when the wait was cancelled (the server stops).
    func admit(_ id: ID, channel: any Channel) async -> Bool {
        while requestConnections >= limit {
            guard !Task.isCancelled else { return false }
            let cutoff = ContinuousClock.now - idleTimeout
            if let victim = entries.filter({ !$0.value.watching && $0.value.busy == 0 && $0.value.lastActive <= cutoff })
                .min(by: { $0.value.lastActive < $1.value.lastActive }) {
                close(victim.key, BrokerError(.resourceExhausted, "this control connection, idle for \(idleTimeout.formattedSeconds), was closed to make room for others (\(limit) at most); connect again"))
                continue
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { waitingForRoom = $0 }
            } onCancel: {
                Task { await self.stopWaiting() }
            }
        }
        entries[id] = Entry(channel: channel, lastActive: .now)
        return true
    }

    private func stopWaiting() {
        waitingForRoom?.resume()
        waitingForRoom = nil
    }

    func leave(_ id: ID) {
        entries[id] = nil
        roomMayHaveCome()
    }

    private func roomMayHaveCome() {
        guard requestConnections < limit, let waiter = waitingForRoom else { return }
        waitingForRoom = nil
        waiter.resume()
    }

    /// A request starts (`busy`) or ends on the connection.
    func began(_ id: ID) {
        entries[id]?.busy += 1
        entries[id]?.lastActive = .now
    }

    func ended(_ id: ID) {
        entries[id]?.busy -= 1
        entries[id]?.lastActive = .now
    }

    /// The connection became a watcher: not idle, not evictable, counted apart. False when the
    /// watcher limit is reached.
    func startWatching(_ id: ID) -> Bool {
        guard watchers < watcherLimit else { return false }
        entries[id]?.watching = true
        roomMayHaveCome()
        return true
    }

    /// Closes request connections idle past the timeout; runs until cancelled.
    func sweep() async {
        while !Task.isCancelled {
            try? await WireRuntime.sleep(for: idleTimeout / 4)
            let cutoff = ContinuousClock.now - idleTimeout
            for (id, entry) in entries where !entry.watching && entry.busy == 0 && entry.lastActive < cutoff {
                close(id, BrokerError(.timedOut, "this control connection was idle for \(idleTimeout.formattedSeconds) and is closed; connect again"))
            }
            // A full table waits for connections to pass the timeout too.
            if let waiter = waitingForRoom {
                waitingForRoom = nil
                waiter.resume()
            }
        }
    }

    /// Closes a connection between its requests, saying why first: its client's next request
    /// fails with that error instead of a bare end of file. A client that reads nothing does
    /// not keep it open: the close follows within a second either way.
    private func close(_ id: ID, _ why: BrokerError) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        evicted += 1
        roomMayHaveCome()
        var envelope = Envelope()
        envelope.body = .error(why.wire)
        let channel = entry.channel
        channel.writeAndFlush(envelope: envelope).whenComplete { _ in channel.close(promise: nil) }
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }
}
