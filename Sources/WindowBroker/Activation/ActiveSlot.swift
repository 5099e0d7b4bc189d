import Foundation
import IPCWire

/// The scene that is foregroundActive, or being told it is: at most one at any time. The focus
/// coordinator says which scene is *meant* to be active; this says which one *is*, so a scene
/// about to become active waits only for a holder that really is active to resign (or go),
/// never for a scene that is still launching: that one is superseded and stays inactive.
struct ActiveSlot {
    private(set) var holder: UUID?
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func isFree(for id: UUID) -> Bool {
        holder == nil || holder == id
    }

    mutating func claim(_ id: UUID) {
        holder = id
    }

    mutating func wait(_ continuation: CheckedContinuation<Void, Never>) {
        waiters.append(continuation)
    }

    /// `id` resigned, went to the background or lost its process. Every waiter looks again.
    mutating func release(_ id: UUID) {
        guard holder == id else { return }
        holder = nil
        wakeWaiters()
    }

    /// Focus moved: a waiter that is no longer meant to be active stops waiting.
    mutating func wakeWaiters() {
        let woken = waiters
        waiters.removeAll()
        for waiter in woken { waiter.resume() }
    }
}

extension Broker {
    /// Waits until no other scene is active, then claims the slot for `id` if it is still the
    /// scene meant to be active. False: a later request moved focus; `id` stays inactive.
    func claimActive(_ id: UUID) async -> Bool {
        while focus.active == id {
            if activeSlot.isFree(for: id) {
                activeSlot.claim(id)
                return true
            }
            await withCheckedContinuation { activeSlot.wait($0) }
        }
        return false
    }

    /// Every change of focus goes through here: a scene waiting for the slot that is no
    /// longer meant to be active stops waiting.
    func changeFocus<T>(_ change: (inout FocusCoordinator) -> T) -> T {
        defer { activeSlot.wakeWaiters() }
        return change(&focus)
    }

    /// Records `state` as the session's and frees the active slot when it leaves foregroundActive.
    func setState(_ id: UUID, _ state: SceneState) {
        sessions[id]?.state = state
        if state != .foregroundActive { activeSlot.release(id) }
    }
}
