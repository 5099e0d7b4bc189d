import Foundation
import IPCWire
import NIOCore

/// The open control connections, so that idle ones cannot lock everyone else out: a full
/// table makes room by closing the connection idle the longest (never one in the middle of a
/// request), connections idle past `idleTimeout` are closed, and watchers (who are idle by
/// design) are counted against a limit of their own instead.
actor ControlConnections {
    /// A connection's number, in the order accepted (a UUID cost three system calls each).
    typealias ID = UInt64

    struct Entry {
        var channel: any Channel
        var lastActive: ContinuousClock.Instant
        var busy = 0
        var watching = false
    }

    enum Admission: Equatable {
        case admitted
        /// Everything open is busy or watching: the newest is told to try again.
        case refused
    }

    private var entries: [ID: Entry] = [:]
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

    /// Takes a new connection, closing the longest-idle one when the table is full.
    func admit(_ id: ID, channel: any Channel) -> Admission {
        if requestConnections >= limit {
            guard let victim = entries.filter({ !$0.value.watching && $0.value.busy == 0 })
                .min(by: { $0.value.lastActive < $1.value.lastActive }) else { return .refused }
            close(victim.key, BrokerError(.resourceExhausted, "this idle control connection was closed to make room for others (\(limit) at most); connect again"))
        }
        entries[id] = Entry(channel: channel, lastActive: .now)
        return .admitted
    }

    func leave(_ id: ID) {
        entries[id] = nil
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
        }
    }

    /// Closes a connection between its requests, saying why first: its client's next request
    /// fails with that error instead of a bare end of file. A client that reads nothing does
    /// not keep it open: the close follows within a second either way.
    private func close(_ id: ID, _ why: BrokerError) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        evicted += 1
        var envelope = Envelope()
        envelope.body = .error(why.wire)
        let channel = entry.channel
        channel.writeAndFlush(envelope: envelope).whenComplete { _ in channel.close(promise: nil) }
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }
}
