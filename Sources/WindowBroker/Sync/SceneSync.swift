import Foundation
import IPCWire

/// What keeps an app's scenes in sync across their processes: update events, shared defaults
/// and per-scene storage. In iPadOS every scene of an app shares one process, so a post or a
/// `UserDefaults` change reaches every window for free; here the broker is that shared space.
///
/// Each app has one order of updates (`sequences`): events and defaults changes take the next
/// number and go into the queue of every connected scene of the app. Each scene has its own
/// bounded queue and its own delivery task, which sends one update at a time and waits for the
/// scene's acknowledgement, so a slow scene only ever delays itself.
///
/// It owns all of that state; it lives in the broker's isolation (not `Sendable`, its methods
/// take the broker as an `isolated` parameter), like a `SessionDriver`.
final class SceneSync {
    /// The last sequence each app handed out.
    var sequences: [AppID: UInt64] = [:]
    /// Each app's shared defaults, as committed to the store.
    var defaults: [AppID: [String: PlistValue]] = [:]
    /// Connected scenes and what is queued for them.
    var outlets: [SessionID: UpdateOutlet] = [:]
    /// `post --wait` callers, until every receiver acknowledged.
    var waits: [PostKey: PostWait] = [:]
    /// Writes of an app's defaults, one at a time, so the store and memory agree on the last.
    var defaultsTurns = SerialQueues<AppID>()
    var postedCount: UInt64 = 0
    var droppedNotices: UInt64 = 0

    private func nextSequence(_ app: AppID) -> UInt64 {
        let next = (sequences[app] ?? 0) + 1
        sequences[app] = next
        return next
    }

    // MARK: - Update events

    /// Posts an event to every connected scene of `app`, the poster's own scene included.
    /// With `wait`, returns once each of them acknowledged it, dropped it in an overflow or
    /// went away, or when `wait` has passed.
    func post(app: AppID, name: String, payload: [String: PlistValue], from poster: SessionID?, wait: Duration?, in broker: isolated Broker) async throws(BrokerError) -> PostOutcome {
        _ = try broker.apps.manifest(app)
        try SyncLimits.checkKey(name, what: "the update's name")
        try SyncLimits.checkSize(payload, maxBytes: broker.configuration.maxUpdatePayloadBytes, what: "the update's payload")
        let sequence = nextSequence(app)
        let update = try QueuedUpdate(sequence: sequence) {
            $0.event = .with {
                $0.name = name
                $0.payload = PlistValue.wire(dictionary: payload)
                $0.postedAt = Date().timeIntervalSince1970
                $0.postedBy = poster?.description ?? ""
            }
        }
        let receivers = outlets.compactMap { $0.value.appID == app ? $0.key : nil }
        let key = PostKey(app: app, sequence: sequence)
        let waiting = wait.map { _ in PostWait(start: .now, expected: Set(receivers)) }
        waits[key] = waiting
        for id in receivers { enqueue(update, sequence: sequence, for: id, in: broker) }
        postedCount += 1
        broker.emit(poster, app: app, .updatePosted(name: name, sequence: sequence, receivers: receivers.count))
        var outcome = PostOutcome(sequence: sequence, receivers: receivers.count)
        guard let wait, let waiting else { return outcome }
        let deadline = Task {
            guard (try? await broker.configuration.clock.sleep(for: wait)) != nil else { return }
            waiting.finish()
        }
        defer { deadline.cancel() }
        if !waiting.expected.isEmpty {
            await withCheckedContinuation { waiting.continuation = $0 }
        }
        waits[key] = nil
        outcome.acknowledged = waiting.acknowledged
        outcome.dropped = Array(waiting.dropped)
        outcome.unacknowledged = Array(waiting.expected.union(waiting.gone))
        return outcome
    }

    /// A receiver is done with a waited-for post, one way or another.
    private func settle(_ key: PostKey, _ id: SessionID, _ outcome: (PostWait) -> Void) {
        guard let wait = waits[key], wait.expected.remove(id) != nil else { return }
        outcome(wait)
        if wait.expected.isEmpty { wait.finish() }
    }

    // MARK: - Shared defaults

    func defaults(app: AppID, in broker: isolated Broker) throws(BrokerError) -> [String: PlistValue] {
        _ = try broker.apps.manifest(app)
        return defaults[app] ?? [:]
    }

    /// Writes (or with nil, deletes) one default of `app`: committed to the store first, then
    /// delivered to every connected scene of the app, the writer's included. Returns the
    /// change's sequence (0: nothing changed).
    func setDefault(app: AppID, key: String, value: PlistValue?, from writer: SessionID?, in broker: isolated Broker) async throws(BrokerError) -> UInt64 {
        _ = try broker.apps.manifest(app)
        try SyncLimits.checkKey(key, what: "the default's key")
        let ticket = defaultsTurns.take(app)
        if !defaultsTurns.tryEnter(app, ticket: ticket) {
            await withCheckedContinuation { defaultsTurns.wait(app, ticket: ticket, $0) }
        }
        defer { defaultsTurns.leave(app) }
        var next = defaults[app] ?? [:]
        guard next[key] != value else { return 0 }
        next[key] = value
        if value != nil {
            try SyncLimits.checkSize(next, maxBytes: broker.configuration.maxDefaultsBytes, what: "app '\(app)''s defaults")
        }
        do {
            try await broker.store.setDefault(app: app, key: key, value: value)
        } catch {
            throw SessionStore.brokerError(error, doing: "save the default '\(key)'", path: broker.store.path)
        }
        defaults[app] = next
        let sequence = nextSequence(app)
        let update = try QueuedUpdate(sequence: sequence) {
            $0.defaultsChanged = .with {
                $0.key = key
                if let value { $0.value = value.wire } else { $0.removed = true }
            }
        }
        for (id, outlet) in outlets where outlet.appID == app {
            enqueue(update, sequence: sequence, for: id, in: broker)
        }
        broker.emit(writer, app: app, .defaultsChanged(key: key, removed: value == nil, sequence: sequence))
        return sequence
    }

    // MARK: - Delivery

    /// What a connecting scene gets before willConnect, taken in the same turn as its queue
    /// opens: nothing posted after the snapshot is missed, nothing in it is delivered twice.
    func openOutlet(_ id: SessionID, app: AppID, connection: WireConnection, in broker: isolated Broker) -> (defaults: [String: PlistValue], sequence: UInt64) {
        outlets[id] = UpdateOutlet(appID: app, connection: connection, queue: UpdateQueue(capacity: broker.configuration.updateQueueLimit))
        return (defaults[app] ?? [:], sequences[app] ?? 0)
    }

    /// willConnect returned: what queued up meanwhile goes out.
    func outletReady(_ id: SessionID, in broker: isolated Broker) {
        guard let outlet = outlets[id] else { return }
        outlet.ready = true
        pump(outlet, id, in: broker)
    }

    /// The scene is going away: nothing more is queued for it, and waiting posts stop waiting
    /// for it. With `only`, only if it is still that connection's outlet.
    func closeOutlet(_ id: SessionID, only: UpdateOutlet? = nil) {
        guard let outlet = outlets[id], only == nil || outlet === only else { return }
        outlets[id] = nil
        for key in waits.keys where key.app == outlet.appID {
            settle(key, id) { $0.gone.insert(id) }
        }
    }

    private func enqueue(_ update: QueuedUpdate, sequence: UInt64, for id: SessionID, in broker: isolated Broker) {
        guard let outlet = outlets[id] else { return }
        guard let overflow = outlet.queue.enqueue(sequence, update) else {
            pump(outlet, id, in: broker)
            return
        }
        let app = outlet.appID
        for dropped in overflow.sequences {
            settle(PostKey(app: app, sequence: dropped), id) { $0.dropped.insert(id) }
        }
        if overflow.newNotice {
            droppedNotices += 1
            broker.logger.warning("a scene's update queue overflowed; it will resynchronise", metadata: [
                "session": "\(id)", "from": "\(overflow.range.lowerBound)", "to": "\(overflow.range.upperBound)",
            ])
        }
        broker.emit(id, app: app, .updatesDropped(from: overflow.range.lowerBound, to: overflow.range.upperBound))
    }

    private func pump(_ outlet: UpdateOutlet, _ id: SessionID, in broker: isolated Broker) {
        guard outlet.ready, !outlet.sending, !outlet.queue.isEmpty else { return }
        outlet.sending = true
        Task { await self.deliver(to: id, outlet: outlet, in: broker) }
    }

    /// The scene's delivery task: one update at a time, each acknowledged before the next,
    /// for as long as `outlet` is the session's (a reconnected session has a new one).
    private func deliver(to id: SessionID, outlet: UpdateOutlet, in broker: isolated Broker) async {
        let (connection, app) = (outlet.connection, outlet.appID)
        while outlets[id] === outlet {
            guard let next = outlet.queue.next() else {
                outlet.sending = false
                return
            }
            let sequence = switch next {
            case .item(let sequence, _): sequence
            case .dropped(let range): range.upperBound
            }
            do {
                let update = switch next {
                case .item(_, let update): update
                case .dropped(let range):
                    try QueuedUpdate(sequence: sequence) {
                        $0.dropped = .with {
                            $0.from = range.lowerBound
                            $0.to = range.upperBound
                            $0.defaults = PlistValue.wire(dictionary: self.defaults[app] ?? [:])
                        }
                    }
                }
                _ = try await connection.request(
                    update.command, timeout: broker.configuration.updateAckTimeout, what: "the scene (update \(sequence))")
                if case .item = next {
                    settle(PostKey(app: app, sequence: sequence), id) { $0.acknowledged[id] = .now - $0.start }
                }
            } catch let error as BrokerError where error.code == .connectionClosed {
                closeOutlet(id, only: outlet)
                return
            } catch {
                // A scene that misses the deadline may still be working through its backlog:
                // the next update waits behind it, and its queue bounds what piles up.
                broker.logger.notice("a scene did not acknowledge an update", metadata: ["session": "\(id)", "sequence": "\(sequence)", "error": "\(error)"])
            }
        }
    }
}

/// One update as it waits in a scene's queue: an update event or a change of the shared
/// defaults, as the command that delivers it, encoded once for all the app's scenes
/// (`PreparedBody`).
struct QueuedUpdate: Sendable {
    let command: PreparedBody

    init(sequence: UInt64, _ kind: (inout Windowbroker_V1_UpdateDelivery) -> Void) throws(BrokerError) {
        var delivery = Windowbroker_V1_UpdateDelivery()
        delivery.sequence = sequence
        kind(&delivery)
        do {
            command = try PreparedBody(.workerCommand(.with { $0.update = delivery }))
        } catch {
            throw BrokerError(.internalError, "cannot encode update \(sequence): \(error)")
        }
    }
}

/// A connected scene's queue of updates and its delivery state, one per connection (a session
/// that reconnects gets a new one: a delivery task of the old connection never touches the
/// new outlet). A class, owned by `SceneSync` in the broker's isolation: a post to N scenes
/// looks each up without copying its queue, and updates it in place.
final class UpdateOutlet {
    let appID: AppID
    let connection: WireConnection
    var queue: UpdateQueue<QueuedUpdate>
    /// The scene finished willConnect: deliveries may start (updates queue up until then).
    var ready = false
    /// Its delivery task runs.
    var sending = false

    init(appID: AppID, connection: WireConnection, queue: UpdateQueue<QueuedUpdate>) {
        self.appID = appID
        self.connection = connection
        self.queue = queue
    }
}

struct PostKey: Hashable {
    var app: AppID
    var sequence: UInt64
}

/// A `post --wait` until every receiver is done with it. A class, updated in place at each
/// acknowledgement: a copy would copy its sets each time (N² hash insertions for N scenes).
final class PostWait {
    let start: ContinuousClock.Instant
    var expected: Set<SessionID>
    var acknowledged: [SessionID: Duration] = [:]
    var dropped: Set<SessionID> = []
    var gone: Set<SessionID> = []
    var continuation: CheckedContinuation<Void, Never>?

    init(start: ContinuousClock.Instant, expected: Set<SessionID>) {
        self.start = start
        self.expected = expected
    }

    /// Wakes the poster: every receiver is done, or the wait is over.
    func finish() {
        continuation?.resume()
        continuation = nil
    }
}

/// What a post did; delivery figures only when the caller waited.
public struct PostOutcome: Sendable {
    public var sequence: UInt64
    public var receivers: Int
    public var acknowledged: [SessionID: Duration] = [:]
    public var unacknowledged: [SessionID] = []
    public var dropped: [SessionID] = []
}

/// The broker's face for keeping scenes in sync: each call is `SceneSync`'s, in the broker's
/// isolation.
extension Broker {
    /// Posts an event to every connected scene of `app`; with `wait`, until each acknowledged it.
    public func post(app: AppID, name: String, payload: [String: PlistValue], from poster: SessionID?, wait: Duration?) async throws(BrokerError) -> PostOutcome {
        try await sync.post(app: app, name: name, payload: payload, from: poster, wait: wait, in: self)
    }

    public func defaults(app: AppID) throws(BrokerError) -> [String: PlistValue] {
        try sync.defaults(app: app, in: self)
    }

    /// Writes (nil: deletes) one of `app`'s shared defaults; its sequence, 0 when nothing changed.
    public func setDefault(app: AppID, key: String, value: PlistValue?, from writer: SessionID?) async throws(BrokerError) -> UInt64 {
        try await sync.setDefault(app: app, key: key, value: value, from: writer, in: self)
    }

    /// The app a scene's own request is about: its own (a scene may not touch another app's).
    func appForSceneRequest(_ requested: String, requester: SessionID) throws(BrokerError) -> AppID {
        guard let own = drivers[requester]?.session.appID else {
            throw BrokerError(.unknownSession, "the requesting scene's session is gone")
        }
        guard requested.isEmpty || AppID(requested) == own else {
            throw BrokerError(.permissionDenied, "a scene of '\(own)' may post and change defaults for its own app only, not '\(requested)'")
        }
        return own
    }
}
