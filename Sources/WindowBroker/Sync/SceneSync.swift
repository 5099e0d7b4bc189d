import Foundation
import IPCWire
import Logging
import Synchronization

/// What keeps an app's scenes in sync across their processes: update events, shared defaults
/// and per-scene storage. In iPadOS every scene of an app shares one process, so a post or a
/// `UserDefaults` change reaches every window for free; here the broker is that shared space.
///
/// Each app has one order of updates (`sequences`): events and defaults changes take the next
/// number and go into the queue of every connected scene of the app. Each scene has its own
/// bounded queue and has one update at a time in flight, so a slow scene only ever delays itself.
/// An update goes out in the turn that queued it, without a task of its own: a post writes to
/// every idle scene before it waits for any. The acknowledgements come back through one mailbox
/// (`answers`) and are taken in the broker's isolation as they arrive, several to a turn when
/// several arrived together; each sends the scene's next update, if one waits.
///
/// It owns all of that state; it lives in its host's isolation (not `Sendable`, its methods
/// take the host as an `isolated` parameter), like a `SessionDriver`, and reaches nothing of the
/// broker but what `SyncHost` lists.
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
    /// Where the event loops hand the scenes' answers to deliveries; nil until the first scene
    /// connects (its reader needs the broker).
    private var answers: DeliveryAnswers?
    /// Numbers the outlets, so an answer finds the connection it was sent on (a session that
    /// reconnected has a new outlet under the same id).
    private var outletSerials: UInt64 = 0

    private func nextSequence(_ app: AppID) -> UInt64 {
        let next = (sequences[app] ?? 0) + 1
        sequences[app] = next
        return next
    }

    // MARK: - Update events

    /// Posts an event to every connected scene of `app`, the poster's own scene included.
    /// With `wait`, returns once each of them acknowledged it, dropped it in an overflow or
    /// went away, or when `wait` has passed.
    func post(app: AppID, name: String, payload: [String: PlistValue], from poster: SessionID?, wait: Duration?, in host: isolated some SyncHost) async throws(BrokerError) -> PostOutcome {
        try host.requireApp(app)
        try SyncLimits.checkKey(name, what: "the update's name")
        try SyncLimits.checkSize(payload, maxBytes: host.configuration.maxUpdatePayloadBytes, what: "the update's payload")
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
        for id in receivers { enqueue(update, sequence: sequence, for: id, in: host) }
        postedCount += 1
        host.emit(poster, app: app, .updatePosted(name: name, sequence: sequence, receivers: receivers.count))
        var outcome = PostOutcome(sequence: sequence, receivers: receivers.count)
        guard let wait, let waiting else { return outcome }
        let deadline = Task {
            guard (try? await host.configuration.clock.sleep(for: wait)) != nil else { return }
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

    func defaults(app: AppID, in host: isolated some SyncHost) throws(BrokerError) -> [String: PlistValue] {
        try host.requireApp(app)
        return defaults[app] ?? [:]
    }

    /// Writes (or with nil, deletes) one default of `app`: committed to the store first, then
    /// delivered to every connected scene of the app, the writer's included. Returns the
    /// change's sequence (0: nothing changed).
    func setDefault(app: AppID, key: String, value: PlistValue?, from writer: SessionID?, in host: isolated some SyncHost) async throws(BrokerError) -> UInt64 {
        try host.requireApp(app)
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
            try SyncLimits.checkSize(next, maxBytes: host.configuration.maxDefaultsBytes, what: "app '\(app)''s defaults")
        }
        do {
            try await host.store.setDefault(app: app, key: key, value: value)
        } catch {
            throw SessionStore.brokerError(error, doing: "save the default '\(key)'", path: host.store.path)
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
            enqueue(update, sequence: sequence, for: id, in: host)
        }
        host.emit(writer, app: app, .defaultsChanged(key: key, removed: value == nil, sequence: sequence))
        return sequence
    }

    // MARK: - Delivery

    /// What a connecting scene gets before willConnect, taken in the same turn as its queue
    /// opens: nothing posted after the snapshot is missed, nothing in it is delivered twice.
    func openOutlet(_ id: SessionID, app: AppID, connection: WireConnection, in host: isolated some SyncHost) -> (defaults: [String: PlistValue], sequence: UInt64) {
        if answers == nil {
            answers = DeliveryAnswers { [weak host] in
                Task { await host?.takeDeliveryAnswers() }
            }
        }
        outletSerials += 1
        outlets[id] = UpdateOutlet(appID: app, serial: outletSerials, connection: connection, queue: UpdateQueue(capacity: host.configuration.updateQueueLimit))
        return (defaults[app] ?? [:], sequences[app] ?? 0)
    }

    /// willConnect returned: what queued up meanwhile goes out.
    func outletReady(_ id: SessionID, in host: isolated some SyncHost) {
        guard let outlet = outlets[id] else { return }
        outlet.ready = true
        pump(outlet, id, in: host)
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

    private func enqueue(_ update: QueuedUpdate, sequence: UInt64, for id: SessionID, in host: isolated some SyncHost) {
        guard let outlet = outlets[id] else { return }
        guard let overflow = outlet.queue.enqueue(sequence, update) else {
            pump(outlet, id, in: host)
            return
        }
        let app = outlet.appID
        for dropped in overflow.sequences {
            settle(PostKey(app: app, sequence: dropped), id) { $0.dropped.insert(id) }
        }
        if overflow.newNotice {
            droppedNotices += 1
            host.logger.warning("a scene's update queue overflowed; it will resynchronise", metadata: [
                "session": "\(id)", "from": "\(overflow.range.lowerBound)", "to": "\(overflow.range.upperBound)",
            ])
        }
        host.emit(id, app: app, .updatesDropped(from: overflow.range.lowerBound, to: overflow.range.upperBound))
    }

    /// Sends the scene its next update unless one is in flight: written now, in this turn,
    /// and its answer handed back through `answers`.
    private func pump(_ outlet: UpdateOutlet, _ id: SessionID, in host: isolated some SyncHost) {
        guard outlet.ready, !outlet.sending, let answers else { return }
        while let next = outlet.queue.next() {
            let (sequence, isItem, update): (UInt64, Bool, QueuedUpdate)
            switch next {
            case .item(let item, let queued):
                (sequence, isItem, update) = (item, true, queued)
            case .dropped(let range):
                (sequence, isItem) = (range.upperBound, false)
                do {
                    update = try QueuedUpdate(sequence: sequence) {
                        $0.dropped = .with {
                            $0.from = range.lowerBound
                            $0.to = range.upperBound
                            $0.defaults = PlistValue.wire(dictionary: self.defaults[outlet.appID] ?? [:])
                        }
                    }
                } catch {
                    host.logger.error("cannot send a scene its update", metadata: ["session": "\(id)", "sequence": "\(sequence)", "error": "\(error.message)"])
                    continue
                }
            }
            outlet.sending = true
            let serial = outlet.serial
            // `what` names the peer in a timeout's message; the sequence goes into the log line
            // `take` writes, so no string is made for every update that is answered in time.
            outlet.connection.issue(update.command, timeout: host.configuration.updateAckTimeout, what: "the scene") { result in
                // On the connection's event loop: the time is taken as the answer is read.
                let failure: BrokerError? = switch result {
                case .success: nil
                case .failure(let error): error
                }
                answers.post(DeliveryAnswer(session: id, outlet: serial, sequence: sequence, isItem: isItem, at: .now, failure: failure))
            }
            return
        }
    }

    /// A scene answered an update (or will not): the post waiting for it hears so, and the
    /// scene's next update goes out, as long as the answer's connection is still the session's.
    func takeAnswers(in host: isolated some SyncHost) {
        while let arrived = answers?.take() {
            for answer in arrived { take(answer, in: host) }
        }
    }

    private func take(_ answer: DeliveryAnswer, in host: isolated some SyncHost) {
        let id = answer.session
        guard let outlet = outlets[id], outlet.serial == answer.outlet else { return }
        outlet.sending = false
        switch answer.failure {
        case nil:
            if answer.isItem {
                settle(PostKey(app: outlet.appID, sequence: answer.sequence), id) { $0.acknowledged[id] = answer.at - $0.start }
            }
        case let error? where error.code == .connectionClosed:
            closeOutlet(id, only: outlet)
            return
        case let error?:
            // A scene that misses the deadline may still be working through its backlog:
            // the next update waits behind it, and its queue bounds what piles up.
            host.logger.notice("a scene did not acknowledge an update", metadata: ["session": "\(id)", "sequence": "\(answer.sequence)", "error": "\(error.message)"])
        }
        pump(outlet, id, in: host)
    }
}

/// What the event loop heard back for one update sent to a scene.
struct DeliveryAnswer: Sendable {
    var session: SessionID
    /// The outlet (`UpdateOutlet.serial`) the update was sent on.
    var outlet: UInt64
    var sequence: UInt64
    /// An update from the queue, as opposed to the notice that some were dropped.
    var isItem: Bool
    var at: ContinuousClock.Instant
    /// Nil: acknowledged.
    var failure: BrokerError?
}

/// The hand-over of the scenes' answers from the event loops to the broker's isolation. An
/// answer that finds the box empty schedules one reader task; the reader takes everything that
/// arrived until then in one turn, so answers read together are taken together, and no task is
/// made per update. (An `AsyncStream` did the same through the runtime's unspecialised generic
/// code: more instructions per answer than the task it saved.)
final class DeliveryAnswers: Sendable {
    private let box = Mutex<(arrived: [DeliveryAnswer], reading: Bool)>(([], false))
    private let startReader: @Sendable () -> Void

    init(startReader: @escaping @Sendable () -> Void) {
        self.startReader = startReader
    }

    func post(_ answer: DeliveryAnswer) {
        let start = box.withLock { box in
            box.arrived.append(answer)
            let idle = !box.reading
            box.reading = true
            return idle
        }
        if start { startReader() }
    }

    /// What arrived since the last take; nil when nothing did, and the reader is done (the
    /// next answer starts another).
    func take() -> [DeliveryAnswer]? {
        box.withLock { box in
            guard !box.arrived.isEmpty else {
                box.reading = false
                return nil
            }
            let taken = box.arrived
            box.arrived = []
            return taken
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
/// that reconnects gets a new one, with a new `serial`: an answer read on the old connection
/// never touches the new outlet). A class, owned by `SceneSync` in the broker's isolation: a post to N scenes
/// looks each up without copying its queue, and updates it in place.
final class UpdateOutlet {
    let appID: AppID
    /// Which of the session's connections this is, for the answers that come back.
    let serial: UInt64
    let connection: WireConnection
    var queue: UpdateQueue<QueuedUpdate>
    /// The scene finished willConnect: deliveries may start (updates queue up until then).
    var ready = false
    /// An update is in flight: sent, not answered yet.
    var sending = false

    init(appID: AppID, serial: UInt64, connection: WireConnection, queue: UpdateQueue<QueuedUpdate>) {
        self.appID = appID
        self.serial = serial
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

/// What `SceneSync` may use of its owner (the broker): the configuration, the store, whether an
/// app is known, its answers' hand-over, events and the log.
protocol SyncHost: Actor {
    var configuration: BrokerConfiguration { get }
    var store: SessionStore { get }
    var logger: Logger { get }
    /// Throws the broker's error for an app it does not know.
    func requireApp(_ app: AppID) throws(BrokerError)
    /// The scenes' answers to updates, from their reader task.
    func takeDeliveryAnswers()
    func emit(_ id: SessionID?, app: AppID, _ event: BrokerEvent)
}

/// The broker's face for keeping scenes in sync: each call is `SceneSync`'s, in the broker's
/// isolation.
extension Broker: SyncHost {
    func requireApp(_ app: AppID) throws(BrokerError) { _ = try apps.manifest(app) }

    /// Posts an event to every connected scene of `app`; with `wait`, until each acknowledged it.
    public func post(app: AppID, name: String, payload: [String: PlistValue], from poster: SessionID?, wait: Duration?) async throws(BrokerError) -> PostOutcome {
        try await sync.post(app: app, name: name, payload: payload, from: poster, wait: wait, in: self)
    }

    /// The scenes' answers to updates, from their reader task.
    func takeDeliveryAnswers() {
        sync.takeAnswers(in: self)
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
