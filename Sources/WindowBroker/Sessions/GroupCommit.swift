import GRDB

/// Group commit: writes submitted while a transaction is on its way are gathered and committed
/// together in the next one, and each caller resumes once its own write is committed (synced
/// to the disk, when it asked for that). Acknowledging a scene's write only after it is on disk
/// then costs one transaction and one sync per round, not one per write, however many scenes
/// write at once.
actor GroupCommit {
    typealias Body = @Sendable (Database) throws -> Void
    /// Commits the bodies in one transaction, synced to the disk when `synced`; for each, nil
    /// or why it failed (rolled back alone).
    typealias Commit = @Sendable (_ bodies: [Body], _ synced: Bool) async throws -> [DatabaseError?]

    private let commit: Commit
    private var pending: [(body: Body, synced: Bool, waiter: CheckedContinuation<Void, any Error>)] = []
    private var committing = false

    init(_ commit: @escaping Commit) {
        self.commit = commit
    }

    /// Returns once `body` is committed; throws what it threw, or why the transaction failed.
    /// With `synced`, its transaction is synced to the disk (one write that asks for it syncs
    /// the transaction it shares with the others).
    func submit(synced: Bool = true, _ body: @escaping Body) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            pending.append((body, synced, continuation))
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
                let results = try await commit(batch.map(\.body), batch.contains { $0.synced })
                for (entry, failure) in zip(batch, results) {
                    if let failure { entry.waiter.resume(throwing: failure) } else { entry.waiter.resume() }
                }
            } catch {
                for entry in batch { entry.waiter.resume(throwing: error) }
            }
        }
        committing = false
    }
}
