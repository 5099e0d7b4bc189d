import IPCWire

/// The steps a scene goes through, in the order docs/LIFECYCLE.md makes part of the contract.
public enum LifecycleStep: String, Sendable, Equatable, CaseIterable {
    /// Spawn the worker and wait for its Hello (app-level launch happens in the worker).
    case launch
    /// Pending discards, configuration, `willConnect` with the activation's activities and the
    /// session's restoration activity.
    case connect
    /// `restoreInteractionState`, only when there is a restoration activity.
    case restoreInteractionState
    case willEnterForeground
    case didBecomeActive
    case willResignActive
    case didEnterBackground
    /// Ask for `stateRestorationActivity` and commit it with the session.
    case saveRestorationActivity
    /// `didDisconnect`, then wait for the process to exit.
    case disconnect

    /// The state the scene is in once the step has completed.
    public func resultingState(from state: SceneState) -> SceneState {
        switch self {
        case .launch, .connect, .restoreInteractionState: .launching
        case .willEnterForeground: .foregroundInactive
        case .didBecomeActive: .foregroundActive
        case .willResignActive: .foregroundInactive
        case .didEnterBackground: .background
        case .saveRestorationActivity: state
        case .disconnect: .unattached
        }
    }
}

/// Where a request wants a scene to end up.
public enum LifecycleTarget: Sendable, Equatable {
    case foregroundActive
    case foregroundInactive
    case background
    /// Disconnected by the system (reclaim): state saved first, session kept.
    case reclaimed
    /// Disconnected because the user discarded the session: nothing is saved.
    case discarded
}

/// The pure lifecycle state machine: (state, target) -> ordered steps. The broker executes the
/// steps one by one against the worker and records the state after each.
public enum LifecyclePlan {
    public static func steps(from state: SceneState, to target: LifecycleTarget, hasRestoration: Bool) -> [LifecycleStep] {
        switch (state, target) {
        case (.unattached, .foregroundActive), (.launching, .foregroundActive):
            return launchSteps(hasRestoration: hasRestoration) + [.willEnterForeground, .didBecomeActive]
        case (.unattached, .foregroundInactive), (.launching, .foregroundInactive):
            return launchSteps(hasRestoration: hasRestoration) + [.willEnterForeground]
        case (.background, .foregroundActive): return [.willEnterForeground, .didBecomeActive]
        case (.background, .foregroundInactive): return [.willEnterForeground]
        case (.foregroundInactive, .foregroundActive): return [.didBecomeActive]
        case (.foregroundActive, .foregroundInactive): return [.willResignActive]
        case (.foregroundActive, .background): return [.willResignActive, .didEnterBackground, .saveRestorationActivity]
        case (.foregroundInactive, .background): return [.didEnterBackground, .saveRestorationActivity]
        case (.background, .reclaimed): return [.saveRestorationActivity, .disconnect]
        case (.foregroundActive, .discarded): return [.willResignActive, .didEnterBackground, .disconnect]
        case (.foregroundInactive, .discarded): return [.didEnterBackground, .disconnect]
        case (.background, .discarded): return [.disconnect]
        case (.foregroundActive, .foregroundActive), (.foregroundInactive, .foregroundInactive),
            (.background, .background), (.unattached, .background), (.unattached, .discarded),
            (.unattached, .reclaimed), (.launching, _):
            return []
        case (.foregroundActive, .reclaimed), (.foregroundInactive, .reclaimed):
            // Foreground scenes are never reclaimed; the broker refuses before planning.
            return []
        }
    }

    private static func launchSteps(hasRestoration: Bool) -> [LifecycleStep] {
        hasRestoration ? [.launch, .connect, .restoreInteractionState] : [.launch, .connect]
    }
}
