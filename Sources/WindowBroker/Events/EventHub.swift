import Foundation
import IPCWire
import NIOCore

/// What a subscriber wants to see; empty sets match everything.
public struct EventFilter: Sendable, Equatable {
    public var sessions: Set<String> = []
    public var apps: Set<String> = []
    public var events: Set<String> = []

    public init(sessions: Set<String> = [], apps: Set<String> = [], events: Set<String> = []) {
        self.sessions = sessions
        self.apps = apps
        self.events = events
    }

    public static let all = EventFilter()

    /// The filter a `watch` request asks for; an event name no event has is refused.
    package init(_ request: Windowbroker_V1_WatchRequest) throws(BrokerError) {
        let unknown = request.events.filter { !BrokerEvent.names.contains($0) }
        guard unknown.isEmpty else {
            throw BrokerError(.invalidRequest, "unknown event name \(unknown.map { "'\($0)'" }.joined(separator: ", ")); known: \(BrokerEvent.names.sorted().joined(separator: ", "))")
        }
        self.init(sessions: Set(request.sessionIds.map { $0.lowercased() }), apps: Set(request.appIds), events: Set(request.events))
    }

    package func matches(_ record: EventRecord) -> Bool {
        (sessions.isEmpty || sessions.contains(record.session?.description ?? ""))
            && (apps.isEmpty || apps.contains(record.app.rawValue))
            && (events.isEmpty || events.contains(record.event.name))
    }
}

/// The one place broker events go out: `wmctl watch` connections, the systemd STATUS line and
/// anything else subscribe here, each with its filter, applied before anything is queued.
/// Owned by the broker's executor; a slow subscriber loses its oldest events instead of
/// stalling the broker.
struct EventHub {
    /// Where a subscriber's events go: a stream its task reads, or a call made right in
    /// `publish`, on the broker's executor (which must not block: `EventBatches.add`).
    enum Sink: Sendable {
        case stream(AsyncStream<EventRecord>.Continuation)
        case call(@Sendable (EventRecord) -> Void, finished: @Sendable () -> Void)

        func send(_ record: EventRecord) {
            switch self {
            case .stream(let continuation): continuation.yield(record)
            case .call(let deliver, _): deliver(record)
            }
        }

        func finish() {
            switch self {
            case .stream(let continuation): continuation.finish()
            case .call(_, let finished): finished()
            }
        }
    }

    private var subscribers: [UUID: (filter: EventFilter, sink: Sink)] = [:]
    /// The newest events, oldest first, for a watcher that asks what happened lately.
    private var recent = CircularBuffer<EventRecord>(initialCapacity: recentKept)
    static let recentKept = 64
    /// The events' log lines, written once the step that emitted them is done.
    let log: EventLogLines

    init(log: EventLogLines) {
        self.log = log
    }

    /// A stream of the events that match `filter` from now on, after the newest `recent` of
    /// those that came before (how many: `replayed`).
    mutating func subscribe(_ filter: EventFilter, recent wanted: Int = 0) -> (id: UUID, events: AsyncStream<EventRecord>, replayed: Int) {
        let (stream, sink) = AsyncStream.makeStream(of: EventRecord.self, bufferingPolicy: .bufferingNewest(1024))
        let earlier = recent.filter(filter.matches).suffix(max(0, wanted))
        for record in earlier { sink.yield(record) }
        return (subscribe(filter, sink: .stream(sink)), stream, earlier.count)
    }

    mutating func subscribe(_ filter: EventFilter, sink: Sink) -> UUID {
        let id = UUID()
        subscribers[id] = (filter, sink)
        return id
    }

    mutating func unsubscribe(_ id: UUID) {
        subscribers.removeValue(forKey: id)?.sink.finish()
    }

    mutating func publish(_ record: EventRecord) {
        if recent.count == Self.recentKept { recent.removeFirst() }  // a ring: nothing moves
        recent.append(record)
        for subscriber in subscribers.values where subscriber.filter.matches(record) {
            subscriber.sink.send(record)
        }
    }

    mutating func finishAll() {
        for subscriber in subscribers.values { subscriber.sink.finish() }
        subscribers.removeAll()
    }
}
