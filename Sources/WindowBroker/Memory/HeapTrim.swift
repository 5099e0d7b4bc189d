import CLinuxShim
import Synchronization

/// Gives the broker's own freed heap pages back to the system shortly after a scene process
/// ends, at most once a second and off the broker's actor. What the broker kept for the
/// process (its connection, buffers, tasks) is then free, but malloc keeps the pages: about
/// half of what a run of relaunches added to the broker's RSS (docs/PERFORMANCE.md).
final class HeapTrim: Sendable {
    private let pending = Atomic<Bool>(false)

    /// A trim within a second, unless one is already due (ends in a burst share one).
    func soon() {
        guard !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task.detached { [self] in
            try? await Task.sleep(for: .seconds(1))
            pending.store(false, ordering: .releasing)
            _ = wb_trim_heap()
        }
    }
}
