import IPCWire

/// The lifecycle of one session while the broker drives it toward a target, as a pure reducer:
/// `(state, event) -> (state, [effect])`. The broker's session driver performs the effects
/// (talks to the worker, kills it, persists, emits) and feeds what happened back as events.
/// Every error path (a missed deadline in the middle of a plan, the process ending during or
/// between steps, a late reply) is decided here, so unit tests can drive it without processes.
public struct SessionLifecycle: Sendable, Equatable {
    public private(set) var state: SceneState
    public private(set) var hasRestoration: Bool
    /// Steps still to run after the one in flight.
    public private(set) var remaining: [LifecycleStep] = []
    /// The step in flight and its attempt number: a reply naming another attempt is late.
    public struct InFlight: Sendable, Equatable {
        public var step: LifecycleStep
        public var attempt: UInt64
        /// The steps after it that went to the scene in the same command (`carry`): they
        /// complete with it, or fail with it.
        public var carried: [LifecycleStep] = []

        /// The callbacks the command asked for, for messages: "willConnect" or
        /// "willConnect (with willEnterForeground, didBecomeActive)".
        public var callbackNames: String {
            carried.isEmpty ? step.callbackName
                : "\(step.callbackName) (with \(carried.map(\.callbackName).joined(separator: ", ")))"
        }
    }
    public private(set) var inFlight: InFlight?
    public private(set) var notes: [String] = []
    public private(set) var isFinished = false
    /// Why the latest state could not be committed during this drive, if it could not.
    public private(set) var saveFailure: BrokerError?
    /// An explicit reclaim without `--force`: a save that fails ends the drive there, with the
    /// scene still running in the background, instead of taking the process anyway.
    public let requireSave: Bool
    private var nextAttempt: UInt64 = 1
    private var completedSteps = 0

    public init(state: SceneState, hasRestoration: Bool, requireSave: Bool = false) {
        self.state = state
        self.hasRestoration = hasRestoration
        self.requireSave = requireSave
    }

    public enum Event: Sendable, Equatable {
        /// Drive the scene to this target (the first event).
        case requested(LifecycleTarget)
        /// The worker completed the step of this attempt.
        case stepSucceeded(attempt: UInt64)
        /// The save step got an activity and committed it.
        case restorationCommitted(attempt: UInt64)
        /// The save step could not produce or commit an activity; the last committed one stays.
        case restorationNotSaved(attempt: UInt64, BrokerError)
        /// The worker did not answer the step within its deadline.
        case deadlineMissed(attempt: UInt64, after: Duration)
        /// The worker refused the step or its connection ended during it.
        case stepFailed(attempt: UInt64, BrokerError)
        /// The process was found gone before the step in flight could start.
        case processEnded
        /// Before didBecomeActive: focus moved to another scene meanwhile, so this one stays
        /// in the foreground, inactive (the later request wins, as on iPadOS).
        case superseded(attempt: UInt64)
    }

    public enum Effect: Sendable, Equatable {
        /// Run this step against the worker (spawn, command with deadline, save, disconnect).
        case perform(LifecycleStep, attempt: UInt64)
        /// Stop the worker now (SIGKILL), recording why.
        case kill(DisconnectReason)
        /// The connection is gone: wait for the process to end, stopping it if it runs on.
        case reap
        /// Record the completed step: the scene is now in `state`.
        case emit(LifecycleStep, SceneState)
        /// Write the session's metadata (one transaction).
        case persist
        /// The drive is over: the notes for the requester, or the error.
        case finish(Result<[String], BrokerError>)
    }

    /// The next steps of the plan go to the scene with the one in flight, in one command that
    /// it answers once (the transitions after willConnect, or after another transition): one
    /// round trip instead of one per step. They complete together when the answer comes, each
    /// recorded in order as if it had been sent alone; a missed deadline or a failure is the
    /// whole command's. Only the steps that come next, in order, can be carried.
    public mutating func carry(_ steps: [LifecycleStep]) {
        guard var inFlight, !steps.isEmpty, remaining.starts(with: steps) else { return }
        remaining.removeFirst(steps.count)
        inFlight.carried += steps
        self.inFlight = inFlight
    }

    public mutating func handle(_ event: Event) -> [Effect] {
        guard !isFinished else { return [] }
        switch event {
        case .requested(let target):
            remaining = LifecyclePlan.steps(from: state, to: target, hasRestoration: hasRestoration)
            return next()

        case .stepSucceeded(let attempt), .restorationCommitted(let attempt):
            guard let step = current(attempt) else { return [] }
            if case .restorationCommitted = event { hasRestoration = true }
            return completed([step] + (inFlight?.carried ?? []))

        case .restorationNotSaved(let attempt, let error):
            guard let step = current(attempt) else { return [] }
            return saveFailed(step, error)

        case .deadlineMissed(let attempt, let after):
            guard let step = current(attempt), let callbacks = inFlight?.callbackNames else { return [] }
            if step == .saveRestorationActivity, requireSave {
                // Refused, not taken: the scene runs on (it may still answer; late replies are ignored).
                return saveFailed(step, BrokerError(.timedOut, "the scene did not finish stateRestorationActivity within \(after.formattedSeconds)"))
            }
            inFlight = nil
            state = .unattached
            switch step {
            case .launch:
                return [.kill(.timedOut)] + finish(.failure(BrokerError(.workerFailed, "the scene process did not start: it did not connect within \(after.formattedSeconds)")))
            case .saveRestorationActivity:
                // A scene stuck in its own save loses its process, never its committed state.
                let message = "the scene did not finish stateRestorationActivity within \(after.formattedSeconds); its process was stopped; \(keptNote)"
                saveFailure = BrokerError(.timedOut, message)
                notes.append(message)
                return [.kill(.timedOut)] + finish(.success(notes))
            default:
                return [.kill(.timedOut)] + finish(.failure(BrokerError(.timedOut, "the scene did not finish \(callbacks) within \(after.formattedSeconds); its process was stopped and its saved state is kept")))
            }

        case .stepFailed(let attempt, let error):
            guard let step = current(attempt), let callbacks = inFlight?.callbackNames else { return [] }
            inFlight = nil
            if error.code == .connectionClosed {
                state = .unattached
                if step == .saveRestorationActivity || step == .disconnect {
                    // Going away anyway: the drive ends where it was going, with what was kept.
                    if step == .saveRestorationActivity { notes.append("the scene's process ended during stateRestorationActivity; \(keptNote)") }
                    return [.reap] + finish(.success(notes))
                }
                return [.reap] + finish(.failure(BrokerError(.workerFailed, "the scene's process ended during \(callbacks); its saved state is kept")))
            }
            if step == .saveRestorationActivity {
                return saveFailed(step, error)
            }
            return finish(.failure(error))

        case .superseded(let attempt):
            guard current(attempt) == .didBecomeActive else { return [] }
            inFlight = nil
            remaining = []
            notes.append("another scene was activated meanwhile; this one stays in the foreground, inactive")
            return (completedSteps > 0 ? [.persist] : []) + finish(.success(notes))

        case .processEnded:
            guard let step = inFlight?.step, step != .launch else { return [] }
            inFlight = nil
            state = .unattached
            if step == .disconnect { return finish(.success(notes)) }  // it was going away anyway
            return finish(.failure(BrokerError(.workerFailed, "the scene's process ended before \(step.callbackName); its last saved state is kept")))
        }
    }

    /// The save produced nothing committable. A required save (explicit reclaim) ends the drive
    /// with the scene running on; otherwise the plan goes on and the driver reports the failure.
    private mutating func saveFailed(_ step: LifecycleStep, _ error: BrokerError) -> [Effect] {
        saveFailure = error
        if requireSave {
            inFlight = nil
            return finish(.failure(BrokerError(error.code, "\(error.message); not reclaimed: the scene keeps running in the background and \(keptNote); `reclaim --force` takes it anyway and loses what was not saved")))
        }
        notes.append("\(error.message); \(keptNote)")
        return completed([step])
    }

    private var keptNote: String {
        hasRestoration ? "the last committed restoration activity is kept" : "there is no earlier saved state"
    }

    private func current(_ attempt: UInt64) -> LifecycleStep? {
        guard let inFlight, inFlight.attempt == attempt else { return nil }  // late: its deadline already passed
        return inFlight.step
    }

    private mutating func completed(_ steps: [LifecycleStep]) -> [Effect] {
        inFlight = nil
        var effects: [Effect] = []
        for step in steps {
            state = step.resultingState(from: state)
            completedSteps += 1
            effects.append(.emit(step, state))
        }
        // One write per drive, at its end (or at a failure): not one per step.
        return effects + next()
    }

    private mutating func next() -> [Effect] {
        guard !remaining.isEmpty else {
            return (completedSteps > 0 ? [.persist] : []) + finish(.success(notes))
        }
        let step = remaining.removeFirst()
        let attempt = nextAttempt
        nextAttempt += 1
        inFlight = InFlight(step: step, attempt: attempt)
        return [.perform(step, attempt: attempt)]
    }

    private mutating func finish(_ result: Result<[String], BrokerError>) -> [Effect] {
        isFinished = true
        remaining = []
        if case .failure = result { return [.persist, .finish(result)] }
        return [.finish(result)]
    }
}

extension LifecycleStep {
    /// The SceneDelegate callback a person would look for in a message.
    public var callbackName: String {
        switch self {
        case .launch: "launch"
        case .connect: "willConnect"
        case .saveRestorationActivity: "stateRestorationActivity"
        case .disconnect: "didDisconnect"
        default: rawValue
        }
    }
}
