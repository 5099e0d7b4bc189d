import Foundation
import IPCWire

/// Decides what other scenes must do so one scene can become the focused one: the current
/// active scene resigns, and the foreground stays bounded (split view holds two), the least
/// recently active foreground scene going to the background.
public enum FocusPolicy {
    public struct Scene: Sendable, Equatable {
        public var id: UUID
        public var state: SceneState
        public var lastActiveAt: Date

        public init(id: UUID, state: SceneState, lastActiveAt: Date) {
            self.id = id
            self.state = state
            self.lastActiveAt = lastActiveAt
        }
    }

    /// The changes to make to other scenes, in order, before `target` becomes active.
    public static func makeRoom(for target: UUID, among scenes: [Scene], maxForeground: Int) -> [(id: UUID, target: LifecycleTarget)] {
        let others = scenes.filter { $0.id != target && $0.state.isForeground }
            .sorted { $0.lastActiveAt < $1.lastActiveAt }
        // Room for the target itself: at most maxForeground - 1 others may stay in the foreground.
        let excess = max(0, others.count - max(0, maxForeground - 1))
        let toBackground = Set(others.prefix(excess).map(\.id))
        var changes: [(id: UUID, target: LifecycleTarget)] = []
        for scene in others where scene.state == .foregroundActive && !toBackground.contains(scene.id) {
            changes.append((scene.id, .foregroundInactive))
        }
        for scene in others where toBackground.contains(scene.id) {
            changes.append((scene.id, .background))
        }
        return changes
    }
}
