import Foundation
import IPCWire

/// The one thing decided atomically across sessions: which scenes are meant to be visible, which
/// of them are dimmed behind a prominent scene, and which one is the key scene. Every visible
/// scene that receives events is foregroundActive (two windows side by side are both active, as
/// in iPadOS split view); keyboard focus is a separate fact, the key scene. Every other part of a
/// scene's lifecycle runs on that session's own driver; this decides what the drivers of *other*
/// sessions must do when one scene comes forward, from what earlier decisions intended rather
/// than from where the scenes happen to be right now.
public struct FocusCoordinator: Sendable, Equatable {
    /// How many scenes may be visible at once (`--max-foreground`); a prominent one is extra.
    public let maxForeground: Int
    /// Scenes meant to be visible, least recently brought forward first. A prominent scene is
    /// not among them: it is presented over them.
    public private(set) var foreground: [SessionID] = []
    /// The key scene: keyboard focus and key commands go to it. At most one.
    public private(set) var key: SessionID?
    /// The scene presented prominently (modal): while it is up, its app's other scenes are
    /// dimmed (foregroundInactive) and cannot be activated; other apps go on as before.
    public private(set) var prominent: SessionID?
    /// The foreground scenes the prominent one dims: those of its own app.
    public private(set) var dimmed: [SessionID] = []
    /// The key scene when the prominent one came up; key again when it goes.
    public private(set) var returnTo: SessionID?
    /// Which app each visible scene belongs to: a prominent scene dims only its own app.
    private var apps: [SessionID: AppID] = [:]
    /// Counts decisions, so a failure can tell whether a later decision superseded its own.
    private var generation: UInt64 = 0

    public init(maxForeground: Int) {
        self.maxForeground = max(1, maxForeground)
    }

    public struct Change: Sendable, Equatable {
        public var id: SessionID
        public var target: LifecycleTarget

        public init(_ id: SessionID, _ target: LifecycleTarget) {
            self.id = id
            self.target = target
        }
    }

    /// What bringing one scene forward asks of the others.
    public struct Decision: Sendable, Equatable {
        public var scene: SessionID
        /// For other scenes, in order: the least recently used foreground scenes beyond the
        /// bound go to the background; a prominent scene dims its app's other scenes.
        public var changes: [Change]
        /// The key scene before; key again if this one fails.
        public var previousKey: SessionID?
        public var presentation: Presentation = .standard
        fileprivate var generation: UInt64 = 0
        fileprivate var previousKeyApp: AppID?
    }

    /// The prominent scene that keeps `id` (of `app`) from being activated, if any: a modal
    /// scene blocks only its own app's other scenes.
    public func blockingProminent(for id: SessionID?, app: AppID) -> SessionID? {
        guard let prominent, prominent != id, apps[prominent] == app else { return nil }
        return prominent
    }

    /// Whether bringing `id` (nil: a new scene) forward the standard way would push another
    /// scene out of the foreground: the rule `automatic` presentation decides by.
    public func standardPlacementEvicts(adding id: SessionID?) -> Bool {
        foreground.filter { $0 != id }.count >= maxForeground
    }

    /// The scenes meant to be on screen, least recently used first (a prominent one last).
    public var visible: [SessionID] { foreground + (prominent.map { [$0] } ?? []) }

    /// Whether `id` is meant to be visible and receiving events.
    public func wantsActive(_ id: SessionID) -> Bool {
        prominent == id || (foreground.contains(id) && !dimmed.contains(id))
    }

    /// Whether a change decided earlier still matches what focus intends for its scene now
    /// (a later decision may have brought it forward again, or sent it away).
    public func stillWants(_ change: Change) -> Bool {
        let id = change.id
        switch change.target {
        case .foregroundActive:
            return wantsActive(id)
        case .foregroundInactive:
            return dimmed.contains(id)
        case .background:
            return prominent != id && !foreground.contains(id)
        default:
            return true
        }
    }

    /// `id` (a scene of `app`) comes forward and becomes the key scene. With `requester` (a
    /// scene asked for it), the requester stays in the foreground beside it; the least
    /// recently used scenes beyond the bound go to the background.
    public mutating func bringForward(_ id: SessionID, app: AppID, beside requester: SessionID? = nil) -> Decision {
        if prominent == id { return present(id, app: app) }
        let previous = key
        let previousApp = previous.flatMap { apps[$0] }
        generation += 1
        apps[id] = app
        foreground.removeAll { $0 == id }
        if let requester, requester != id, foreground.contains(requester) {
            foreground.removeAll { $0 == requester }
            foreground.append(requester)
        }
        foreground.append(id)
        key = id
        let excess = max(0, foreground.count - maxForeground)
        let toBackground = Array(foreground.prefix(excess))
        for gone in toBackground { forget(gone) }
        return Decision(scene: id, changes: toBackground.map { Change($0, .background) },
                        previousKey: previous == id ? nil : previous, generation: generation, previousKeyApp: previousApp)
    }

    /// `id` is presented prominently: it becomes the key scene over its app's foreground
    /// scenes, which stay visible, dimmed (foregroundInactive), until it is dismissed.
    public mutating func present(_ id: SessionID, app: AppID) -> Decision {
        let previous = key
        generation += 1
        if prominent == nil { returnTo = previous == id ? nil : previous }
        prominent = id
        apps[id] = app
        foreground.removeAll { $0 == id }
        key = id
        let newlyDimmed = foreground.filter { apps[$0] == app && !dimmed.contains($0) }
        dimmed += newlyDimmed
        return Decision(scene: id, changes: newlyDimmed.map { Change($0, .foregroundInactive) },
                        previousKey: previous == id ? nil : previous, presentation: .prominent, generation: generation)
    }

    /// The user focused `id`'s window (the compositor says so): it is the key scene and the
    /// most recently used. False when it is not a visible scene.
    public mutating func focused(_ id: SessionID) -> Bool {
        guard wantsActive(id) else { return false }
        if foreground.contains(id) {
            foreground.removeAll { $0 == id }
            foreground.append(id)
        }
        key = id
        return true
    }

    /// The broker made `id` the key scene and the compositor kept the keyboard on `holder`'s
    /// window (nil: a window that is no scene's, or none): the key scene is where the keyboard is.
    public mutating func keyRefused(_ id: SessionID, keptBy holder: SessionID?) {
        guard key == id else { return }
        key = holder.flatMap { wantsActive($0) ? $0 : nil }
    }

    /// `id`'s window lost the keyboard (to a window that is not a scene, or to none).
    public mutating func unfocused(_ id: SessionID) {
        if key == id { key = nil }
    }

    /// `id` leaves the foreground (sent to the background, reclaimed, closed, its process ended).
    /// When it was the key scene, the most recently used visible scene is key next, as a
    /// compositor gives the keyboard to the next window. When it was presented prominently,
    /// the scenes it dimmed are active again (returned as changes) and the scene that was key
    /// before it is key again.
    @discardableResult
    public mutating func remove(_ id: SessionID) -> [Change] {
        let wasKey = key == id
        forget(id)
        if returnTo == id { returnTo = nil }
        guard prominent == id else {
            if wasKey { key = prominent ?? foreground.last }
            return []
        }
        prominent = nil
        generation += 1
        let undimmed = dimmed
        dimmed = []
        if wasKey || key == nil {
            key = returnTo.flatMap { foreground.contains($0) ? $0 : nil } ?? foreground.last
        }
        returnTo = nil
        return undimmed.map { Change($0, .foregroundActive) }
    }

    /// Bringing `decision.scene` forward failed: it leaves the foreground and, unless a later
    /// decision already moved focus elsewhere, the scene that was key before is key again (back
    /// from the background when it had made room for the failed one).
    public mutating func bringForwardFailed(_ decision: Decision) -> [Change] {
        // The failing scene may already be gone from the foreground (its process ended).
        let superseded = decision.generation != generation
        var changes = remove(decision.scene)
        guard !superseded, let previous = decision.previousKey else { return changes }
        if !wantsActive(previous), decision.changes.contains(Change(previous, .background)),
           foreground.count < maxForeground, let app = decision.previousKeyApp {
            foreground.append(previous)
            apps[previous] = app
            changes.append(Change(previous, .foregroundActive))
        }
        if wantsActive(previous) { key = previous }
        return changes
    }

    private mutating func forget(_ id: SessionID) {
        foreground.removeAll { $0 == id }
        dimmed.removeAll { $0 == id }
        if key == id { key = nil }
        apps[id] = nil
    }
}
