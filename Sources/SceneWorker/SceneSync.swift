#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// The app's shared defaults, as this scene sees them: `UserDefaults` shared by every scene of
/// the app, kept by the broker (durable, plist-typed, size-limited). The values are in place
/// before `willConnect`; every change, this scene's own included, arrives in the app's order
/// of updates and reaches `changes(for:)` and `SceneDelegate.defaultsDidChange`.
@MainActor
public final class SharedDefaults {
    /// What the broker last confirmed.
    private var confirmed: [String: PlistValue]
    /// `confirmed` with this scene's writes that are still on their way.
    private var values: [String: PlistValue]
    private var observers: [String: MainActorSubscribers<PlistValue?>] = [:]
    private let writer: (String, PlistValue?) async throws -> Void
    /// The runtime tells the scene's delegate.
    var onChange: ((String, PlistValue?) -> Void)?
    var onRefused: ((BrokerError) -> Void)?

    init(_ values: [String: PlistValue], writer: @escaping (String, PlistValue?) async throws -> Void) {
        confirmed = values
        self.values = values
        self.writer = writer
    }

    /// Reading gives this scene's latest write at once; writing sends it to the broker (a
    /// refusal, e.g. `payloadTooLarge`, goes to `SceneDelegate.updateRefused` and the value
    /// goes back to the broker's). `set(_:forKey:)` waits and throws instead.
    public subscript(key: String) -> PlistValue? {
        get { values[key] }
        set {
            values[key] = newValue
            Task {
                do {
                    try await writer(key, newValue)
                } catch let error as BrokerError {
                    values[key] = confirmed[key]
                    onRefused?(error)
                } catch {}
            }
        }
    }

    /// Writes a default (nil removes it) and returns once the broker has committed it.
    public func set(_ value: PlistValue?, forKey key: String) async throws {
        values[key] = value
        do {
            try await writer(key, value)
        } catch {
            values[key] = confirmed[key]
            throw error
        }
    }

    /// Every default of the app.
    public var all: [String: PlistValue] { values }

    /// The value of `key` each time it changes (anywhere in the app), until the scene disconnects.
    public func changes(for key: String) -> MainActorStream<PlistValue?> {
        observers[key, default: MainActorSubscribers()].subscribe()
    }

    /// A change the broker committed and delivered in order.
    func apply(key: String, value: PlistValue?) {
        confirmed[key] = value
        values[key] = value
        observers[key]?.send(value)
        onChange?(key, value)
    }

    /// After dropped updates: the broker's values as they are now; changed keys are reported.
    func resync(_ snapshot: [String: PlistValue]) {
        let keys = Set(snapshot.keys).union(confirmed.keys)
        let changed = keys.filter { snapshot[$0] != confirmed[$0] }
        for key in changed.sorted() { apply(key: key, value: snapshot[key]) }
    }

    func finish() {
        for var subscribers in observers.values { subscribers.finish() }
        observers.removeAll()
    }
}

/// This scene's own storage (`@SceneStorage`): small values (a scroll offset, a selected tab)
/// saved with the session and handed back before `willConnect` after reclaim, a crash or a
/// broker restart; deleted with the session. Writes are merged and sent in order; the broker
/// commits every write the scene made before it answered a lifecycle call or action before it
/// acts on that answer.
@MainActor
public final class SceneStorage {
    private var values: [String: PlistValue]
    private let onWrite: (String, PlistValue?) -> Void

    init(_ values: [String: PlistValue], onWrite: @escaping (String, PlistValue?) -> Void) {
        self.values = values
        self.onWrite = onWrite
    }

    /// Reading gives the value at once; writing sends it to the broker, in order with the
    /// scene's other messages, and the broker keeps it with the session.
    public subscript(key: String) -> PlistValue? {
        get { values[key] }
        set {
            guard values[key] != newValue else { return }
            values[key] = newValue
            onWrite(key, newValue)
        }
    }

    /// Every key and value the scene has stored.
    public var all: [String: PlistValue] { values }
}

/// Storage writes not sent yet, merged key by key.
struct PendingStorage {
    var set: [String: PlistValue] = [:]
    var removed: Set<String> = []

    mutating func record(_ key: String, _ value: PlistValue?) {
        if let value {
            set[key] = value
            removed.remove(key)
        } else {
            set[key] = nil
            removed.insert(key)
        }
    }

    var wire: Windowbroker_V1_SceneStorageUpdate {
        .with {
            $0.set = PlistValue.wire(dictionary: set)
            $0.removed = removed.sorted()
        }
    }
}
