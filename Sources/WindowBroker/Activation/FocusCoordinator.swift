import Foundation
import IPCWire

/// The one thing decided atomically across sessions: which scene is meant to be active and
/// which are meant to be in the foreground (split view holds `maxForeground`). Every other
/// part of a scene's lifecycle runs on that session's own driver; this decides what the
/// drivers of *other* sessions must do when one scene comes forward, from what earlier
/// decisions intended rather than from where the scenes happen to be right now.
public struct FocusCoordinator: Sendable, Equatable {
    public let maxForeground: Int
    /// The scene meant to be foregroundActive.
    public private(set) var active: UUID?
    /// Scenes meant to be in the foreground, least recently active first. A prominent scene
    /// is not among them: it is presented over them.
    public private(set) var foreground: [UUID] = []
    /// The scene presented prominently (modal): while it is up, no other scene is activated.
    public private(set) var prominent: UUID?
    /// The scene that was active when the prominent one came up; active again when it goes.
    public private(set) var returnTo: UUID?
    /// Counts decisions, so a failure can tell whether a later decision superseded its own.
    private var generation: UInt64 = 0

    public init(maxForeground: Int) {
        self.maxForeground = max(1, maxForeground)
    }

    public struct Change: Sendable, Equatable {
        public var id: UUID
        public var target: LifecycleTarget

        public init(_ id: UUID, _ target: LifecycleTarget) {
            self.id = id
            self.target = target
        }
    }

    /// What bringing one scene forward asks of the others.
    public struct Decision: Sendable, Equatable {
        public var scene: UUID
        /// For other scenes, in order: the active one resigns, the least recently active
        /// foreground scenes beyond the bound go to the background.
        public var changes: [Change]
        /// The scene that was meant to be active before; it is active again if this one fails.
        public var previousActive: UUID?
        public var presentation: Presentation = .standard
        fileprivate var generation: UInt64 = 0
        /// The change whose completion `scene` waits for before it becomes active, so that at
        /// most one scene is ever foregroundActive.
        public var resigning: UUID? {
            changes.first { $0.id == previousActive }?.id
        }
    }

    /// The prominent scene that keeps `id` from being activated, if any.
    public func blockingProminent(for id: UUID) -> UUID? {
        prominent == id ? nil : prominent
    }

    /// Whether bringing `id` (nil: a new scene) forward the standard way would push another
    /// scene out of the foreground: the rule `automatic` presentation decides by.
    public func standardPlacementEvicts(adding id: UUID?) -> Bool {
        foreground.filter { $0 != id }.count >= maxForeground
    }

    /// Whether a change decided earlier still matches what focus intends for its scene now
    /// (a later decision may have brought it forward again, or sent it away).
    public func stillWants(_ change: Change) -> Bool {
        let id = change.id
        switch change.target {
        case .foregroundActive:
            return active == id
        case .foregroundInactive:
            return active != id
        case .background:
            return active != id && prominent != id && !foreground.contains(id)
        default:
            return true
        }
    }

    /// `id` is to become the active scene. With `requester` (a scene asked for it), the
    /// requester stays in the foreground beside it; other scenes beyond the bound go.
    public mutating func bringForward(_ id: UUID, beside requester: UUID? = nil) -> Decision {
        if prominent == id { return present(id) }
        let previous = active
        generation += 1
        foreground.removeAll { $0 == id }
        if let requester, requester != id, foreground.contains(requester) {
            foreground.removeAll { $0 == requester }
            foreground.append(requester)
        }
        foreground.append(id)
        active = id
        var changes: [Change] = []
        let excess = max(0, foreground.count - maxForeground)
        let toBackground = Array(foreground.prefix(excess))
        foreground.removeFirst(excess)
        if let previous, previous != id, !toBackground.contains(previous) {
            changes.append(Change(previous, .foregroundInactive))
        }
        changes += toBackground.map { Change($0, .background) }
        return Decision(scene: id, changes: changes, previousActive: previous == id ? nil : previous, generation: generation)
    }

    /// `id` is presented prominently: it becomes active over every foreground scene, which
    /// stay in the foreground, inactive (dimmed), until it is dismissed.
    public mutating func present(_ id: UUID) -> Decision {
        let previous = active
        generation += 1
        if prominent == nil { returnTo = previous == id ? nil : previous }
        prominent = id
        foreground.removeAll { $0 == id }
        active = id
        let changes = previous.flatMap { $0 == id ? nil : [Change($0, .foregroundInactive)] } ?? []
        return Decision(scene: id, changes: changes, previousActive: previous == id ? nil : previous,
                        presentation: .prominent, generation: generation)
    }

    /// `id` leaves the foreground (sent to the background, reclaimed, closed, its process ended).
    /// No other scene becomes active by itself, as on iPadOS, except when a prominent scene is
    /// dismissed: the scene it was presented over is active again (returned as a change).
    @discardableResult
    public mutating func remove(_ id: UUID) -> [Change] {
        foreground.removeAll { $0 == id }
        if returnTo == id { returnTo = nil }
        guard prominent == id else {
            if active == id { active = nil }
            return []
        }
        prominent = nil
        let back = returnTo
        returnTo = nil
        guard active == id || active == nil else { return [] }
        active = nil
        guard let back, foreground.contains(back) else { return [] }
        generation += 1
        active = back
        return [Change(back, .foregroundActive)]
    }

    /// Bringing `decision.scene` forward failed: it leaves the foreground and, unless a later
    /// decision already moved focus elsewhere, the scene that was active before is active again.
    public mutating func bringForwardFailed(_ decision: Decision) -> [Change] {
        // The failing scene may already be gone from the foreground (its process ended).
        let superseded = decision.generation != generation
        let returned = remove(decision.scene)
        if !returned.isEmpty { return returned }
        guard !superseded, active == nil, let previous = decision.previousActive,
              foreground.contains(previous) || decision.changes.contains(Change(previous, .background)) else { return [] }
        foreground.removeAll { $0 == previous }
        foreground.append(previous)
        active = previous
        return [Change(previous, .foregroundActive)]
    }
}
