import GRDB

/// Group commit: writes submitted while a transaction is on its way are gathered and committed
/// together in the next one, and each caller resumes once its own write is on disk. Acknowledging
/// a scene's write only after it is committed then costs one transaction per round, not one per
/// write, however many scenes write at once.
actor GroupCommit {
    typealias Body = @Sendable (Database) throws -> Void
    /// Commits the bodies in one transaction; for each, nil or why it failed (rolled back alone).
    typealias Commit = @Sendable ([Body]) async throws -> [DatabaseError?]

    private let commit: Commit
    private var pending: [(Body, CheckedContinuation<Void, any Error>)] = []
    private var committing = false

    init(_ commit: @escaping Commit) {
        self.commit = commit
    }

    /// Returns once `body` is committed; throws what it threw, or why the transaction failed.
    func submit(_ body: @escaping Body) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            pending.append((body, continuation))
            if !committing {
                committing = true
                Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        while !pending.isEmpty {
            let batch = pending
            pending = []
            do {
                let results = try await commit(batch.map(\.0))
                for ((_, waiter), failure) in zip(batch, results) {
                    if let failure { waiter.resume(throwing: failure) } else { waiter.resume() }
                }
            } catch {
                for (_, waiter) in batch { waiter.resume(throwing: error) }
            }
        }
        committing = false
    }
}
