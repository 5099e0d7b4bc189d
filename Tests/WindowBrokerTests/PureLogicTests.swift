import Foundation
import IPCWire
import NIOPosix
import XCTest

@testable import WindowBroker

/// The pure parts of the broker, driven without processes.
final class LifecyclePlanTests: XCTestCase {
    func testNewSceneLaunchesConnectsAndComesForward() {
        XCTAssertEqual(LifecyclePlan.steps(from: .unattached, to: .foregroundActive, hasRestoration: false),
                       [.launch, .connect, .willEnterForeground, .didBecomeActive])
    }

    func testReconnectRestoresInteractionStateBeforeTheFirstForeground() {
        XCTAssertEqual(LifecyclePlan.steps(from: .unattached, to: .foregroundActive, hasRestoration: true),
                       [.launch, .connect, .restoreInteractionState, .willEnterForeground, .didBecomeActive])
    }

    func testBackgroundResignsThenSaves() {
        XCTAssertEqual(LifecyclePlan.steps(from: .foregroundActive, to: .background, hasRestoration: false),
                       [.willResignActive, .didEnterBackground, .saveRestorationActivity])
        XCTAssertEqual(LifecyclePlan.steps(from: .foregroundInactive, to: .background, hasRestoration: true),
                       [.didEnterBackground, .saveRestorationActivity])
    }

    func testReclaimSavesBeforeDisconnectAndNeverAppliesToForegroundScenes() {
        XCTAssertEqual(LifecyclePlan.steps(from: .background, to: .reclaimed, hasRestoration: true), [.saveRestorationActivity, .disconnect])
        XCTAssertEqual(LifecyclePlan.steps(from: .foregroundActive, to: .reclaimed, hasRestoration: true), [])
        XCTAssertEqual(LifecyclePlan.steps(from: .foregroundInactive, to: .reclaimed, hasRestoration: true), [])
    }

    func testDiscardDisconnectsWithoutSaving() {
        XCTAssertEqual(LifecyclePlan.steps(from: .foregroundActive, to: .discarded, hasRestoration: true),
                       [.willResignActive, .didEnterBackground, .disconnect])
        XCTAssertFalse(LifecyclePlan.steps(from: .background, to: .discarded, hasRestoration: true).contains(.saveRestorationActivity))
    }

    func testFocusChangesAreSingleCallbacks() {
        XCTAssertEqual(LifecyclePlan.steps(from: .foregroundActive, to: .foregroundInactive, hasRestoration: false), [.willResignActive])
        XCTAssertEqual(LifecyclePlan.steps(from: .foregroundInactive, to: .foregroundActive, hasRestoration: false), [.didBecomeActive])
        XCTAssertEqual(LifecyclePlan.steps(from: .background, to: .foregroundActive, hasRestoration: false), [.willEnterForeground, .didBecomeActive])
    }

    func testEveryPlanEndsInItsTargetState() {
        let targets: [(LifecycleTarget, SceneState)] = [
            (.foregroundActive, .foregroundActive), (.foregroundInactive, .foregroundInactive),
            (.background, .background), (.reclaimed, .unattached), (.discarded, .unattached),
        ]
        for start in SceneState.allCases where start != .launching {
            for (target, expected) in targets {
                let steps = LifecyclePlan.steps(from: start, to: target, hasRestoration: true)
                guard !steps.isEmpty else { continue }
                let end = steps.reduce(start) { $1.resultingState(from: $0) }
                XCTAssertEqual(end, expected, "\(start) -> \(target): \(steps)")
            }
        }
    }
}

final class FocusCoordinatorTests: XCTestCase {
    /// Issue 19, hazard 1: a focus change decided earlier and run later must not undo a later
    /// decision. Before, `refocus` only checked that the scene was connected.
    func testAChangeDecidedBeforeALaterDecisionIsNoLongerWanted() {
        var focus = FocusCoordinator(maxForeground: 1)
        let (a, b) = (SessionID(), SessionID())
        _ = focus.bringForward(a, app: "notes")
        let opening = focus.bringForward(b, app: "notes")
        let leave = FocusCoordinator.Change(a, .background)
        XCTAssertEqual(opening.changes, [leave])
        XCTAssertTrue(focus.stillWants(leave))
        _ = focus.bringForward(a, app: "notes")  // `activate a`, decided before a's background ran
        XCTAssertFalse(focus.stillWants(leave), "the old change would take the visible scene away")
        XCTAssertTrue(focus.stillWants(.init(b, .background)))
        XCTAssertFalse(focus.stillWants(.init(a, .foregroundInactive)), "a is visible and not dimmed")
    }

    /// Every visible scene is active; bringing one forward moves only the key scene.
    func testTwoScenesSideBySideAreBothActiveAndTheNewOneIsKey() {
        var focus = FocusCoordinator(maxForeground: 2)
        let a = SessionID(), b = SessionID()
        XCTAssertEqual(focus.bringForward(a, app: "notes").changes, [])
        let decision = focus.bringForward(b, app: "notes")
        XCTAssertEqual(decision.changes, [], "a stays foregroundActive beside b")
        XCTAssertEqual(decision.previousKey, a)
        XCTAssertEqual(focus.key, b)
        XCTAssertEqual(focus.foreground, [a, b])
        XCTAssertTrue(focus.wantsActive(a) && focus.wantsActive(b))
    }

    func testAStandardRequestKeepsTheRequesterBesideTheNewScene() {
        var focus = FocusCoordinator(maxForeground: 2)
        let requester = SessionID(), other = SessionID(), new = SessionID()
        _ = focus.bringForward(requester, app: "notes")
        _ = focus.bringForward(other, app: "notes")  // requester is now the least recently used
        let decision = focus.bringForward(new, app: "notes", beside: requester)
        XCTAssertEqual(decision.changes, [.init(other, .background)], "the other scene makes room, not the requester")
        XCTAssertEqual(focus.foreground, [requester, new])
        XCTAssertEqual(focus.key, new)
        XCTAssertFalse(focus.standardPlacementEvicts(adding: new))
        XCTAssertTrue(focus.standardPlacementEvicts(adding: nil))
    }

    /// A prominent scene dims and blocks only its own app's other scenes.
    func testAProminentSceneDimsItsAppsScenesRefusesTheirActivationAndGivesKeyBack() {
        var focus = FocusCoordinator(maxForeground: 3)
        let a = SessionID(), b = SessionID(), other = SessionID(), sheet = SessionID()
        _ = focus.bringForward(a, app: "notes")
        _ = focus.bringForward(other, app: "tally")
        _ = focus.bringForward(b, app: "notes")
        let decision = focus.present(sheet, app: "notes")
        XCTAssertEqual(decision.presentation, .prominent)
        XCTAssertEqual(decision.changes, [.init(a, .foregroundInactive), .init(b, .foregroundInactive)],
                       "the app's scenes are dimmed; nothing goes to the background under a sheet")
        XCTAssertTrue(focus.wantsActive(other), "another app's scene is not dimmed")
        XCTAssertEqual(focus.key, sheet)
        XCTAssertEqual(focus.blockingProminent(for: a, app: "notes"), sheet)
        XCTAssertNil(focus.blockingProminent(for: other, app: "tally"), "another app goes on")
        XCTAssertNil(focus.blockingProminent(for: sheet, app: "notes"))
        XCTAssertEqual(focus.bringForward(sheet, app: "notes").presentation, .prominent, "activating it again keeps it prominent")
        XCTAssertEqual(focus.remove(sheet), [.init(a, .foregroundActive), .init(b, .foregroundActive)],
                       "dismissed: the scenes it dimmed are active again")
        XCTAssertEqual(focus.key, b, "the key scene before the sheet is key again")
        XCTAssertNil(focus.prominent)
    }

    func testAFailedProminentLaunchGivesEverythingBack() {
        var focus = FocusCoordinator(maxForeground: 2)
        let a = SessionID(), sheet = SessionID()
        _ = focus.bringForward(a, app: "notes")
        let decision = focus.present(sheet, app: "notes")
        XCTAssertEqual(focus.bringForwardFailed(decision), [.init(a, .foregroundActive)])
        XCTAssertEqual(focus.key, a)
        XCTAssertNil(focus.prominent)
    }

    func testTheLeastRecentlyUsedForegroundSceneGoesToTheBackground() {
        var focus = FocusCoordinator(maxForeground: 2)
        let old = SessionID(), recent = SessionID(), new = SessionID()
        _ = focus.bringForward(old, app: "notes")
        _ = focus.bringForward(recent, app: "notes")
        let decision = focus.bringForward(new, app: "notes")
        XCTAssertEqual(decision.changes, [.init(old, .background)])
        XCTAssertEqual(focus.foreground, [recent, new])
    }

    /// The user focusing a window makes it key and the most recently used: the other one is
    /// the one that makes room next.
    func testTheCompositorsFocusMakesASceneKeyAndRecentlyUsed() {
        var focus = FocusCoordinator(maxForeground: 2)
        let a = SessionID(), b = SessionID(), c = SessionID()
        _ = focus.bringForward(a, app: "notes")
        _ = focus.bringForward(b, app: "notes")
        XCTAssertTrue(focus.focused(a))
        XCTAssertEqual(focus.key, a)
        XCTAssertFalse(focus.focused(c), "a scene that is not visible cannot take the keyboard")
        XCTAssertEqual(focus.bringForward(c, app: "notes").changes, [.init(b, .background)])
        focus.unfocused(c)
        XCTAssertNil(focus.key, "the keyboard went to a window that is no scene")
    }

    /// A compositor that does not grant the broker's activation keeps the keyboard where it
    /// was: the key scene is that window's, or none when it is no scene's (issue 66.1).
    func testARefusedKeyStaysWhereTheKeyboardIs() {
        var focus = FocusCoordinator(maxForeground: 3)
        let a = SessionID(), b = SessionID(), c = SessionID()
        _ = focus.bringForward(a, app: "notes")
        _ = focus.bringForward(b, app: "notes")
        _ = focus.bringForward(a, app: "notes")
        focus.keyRefused(a, keptBy: b)
        XCTAssertEqual(focus.key, b)
        XCTAssertEqual(focus.visible, [b, a], "a stays on screen")
        _ = focus.bringForward(a, app: "notes")
        focus.keyRefused(a, keptBy: c)
        XCTAssertNil(focus.key, "c is not on screen: the keyboard is on no scene's window")
        _ = focus.bringForward(b, app: "notes")
        focus.keyRefused(a, keptBy: c)
        XCTAssertEqual(focus.key, b, "a refusal that comes after another activation changes nothing")
    }

    func testWhenTheKeySceneLeavesTheMostRecentlyUsedOneIsKey() {
        var focus = FocusCoordinator(maxForeground: 3)
        let a = SessionID(), b = SessionID(), c = SessionID()
        for id in [a, b, c] { _ = focus.bringForward(id, app: "notes") }
        XCTAssertEqual(focus.remove(c), [])
        XCTAssertEqual(focus.key, b)
        XCTAssertEqual(focus.remove(a), [])
        XCTAssertEqual(focus.key, b, "a scene that was not key leaving changes nothing")
    }

    func testDecisionsFollowEarlierIntentionsNotCurrentStates() {
        var focus = FocusCoordinator(maxForeground: 1)
        let a = SessionID(), b = SessionID()
        _ = focus.bringForward(a, app: "notes")
        focus.remove(a)  // `background a` was requested; its save may still be running
        XCTAssertEqual(focus.bringForward(b, app: "notes").changes, [], "a is not sent to the background twice")
    }

    func testAFailedLaunchMakesThePreviousSceneKeyAgain() {
        var focus = FocusCoordinator(maxForeground: 2)
        let a = SessionID(), b = SessionID()
        _ = focus.bringForward(a, app: "notes")
        let decision = focus.bringForward(b, app: "notes")
        XCTAssertEqual(focus.bringForwardFailed(decision), [])
        XCTAssertEqual(focus.key, a)
        XCTAssertEqual(focus.foreground, [a])
    }

    func testAFailedLaunchWhoseProcessAlreadyEndedStillRestoresFocus() {
        var focus = FocusCoordinator(maxForeground: 1)
        let a = SessionID(), b = SessionID()
        _ = focus.bringForward(a, app: "notes")
        let decision = focus.bringForward(b, app: "notes")
        focus.remove(b)  // the new scene's process exited before it said hello
        XCTAssertEqual(focus.bringForwardFailed(decision), [.init(a, .foregroundActive)], "a had gone to the background for b")
        XCTAssertEqual(focus.foreground, [a])
        XCTAssertEqual(focus.key, a)
    }

    func testAFailedLaunchDoesNotUndoALaterDecision() {
        var focus = FocusCoordinator(maxForeground: 2)
        let a = SessionID(), b = SessionID(), c = SessionID()
        _ = focus.bringForward(a, app: "notes")
        let failing = focus.bringForward(b, app: "notes")
        _ = focus.bringForward(c, app: "notes")
        XCTAssertEqual(focus.bringForwardFailed(failing), [])
        XCTAssertEqual(focus.key, c)
        XCTAssertFalse(focus.foreground.contains(b))
    }

    /// Whatever the order of requests: the bound holds, the key scene is visible, and a dimmed
    /// scene is one the prominent scene's app owns.
    func testTheInvariantsHoldForAnyOrderOfDecisions() {
        var focus = FocusCoordinator(maxForeground: 2)
        let ids = (0..<5).map { _ in SessionID() }
        let apps: [SessionID: AppID] = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0 % 2 == 0 ? "notes" : "tally") })
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let id = ids.randomElement(using: &generator)!
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: focus.remove(id)
            case 1: _ = focus.focused(id)
            case 2 where focus.blockingProminent(for: id, app: apps[id]!) == nil && focus.prominent == nil:
                _ = focus.present(id, app: apps[id]!)
            default:
                if focus.blockingProminent(for: id, app: apps[id]!) == nil { _ = focus.bringForward(id, app: apps[id]!) }
            }
            XCTAssertLessThanOrEqual(focus.foreground.count, 2)
            XCTAssertEqual(Set(focus.foreground).count, focus.foreground.count)
            if let key = focus.key { XCTAssertTrue(focus.wantsActive(key), "the key scene is visible and not dimmed") }
            XCTAssertFalse(focus.prominent.map(focus.foreground.contains) ?? false)
            for dimmed in focus.dimmed {
                XCTAssertTrue(focus.foreground.contains(dimmed))
                XCTAssertEqual(apps[dimmed], focus.prominent.flatMap { apps[$0] })
            }
        }
    }
}

/// The lifecycle reducer's error paths, driven event by event without processes.
final class SessionLifecycleTests: XCTestCase {
    private func perform(_ effects: [SessionLifecycle.Effect]) -> (LifecycleStep, UInt64)? {
        for case .perform(let step, let attempt) in effects { return (step, attempt) }
        return nil
    }

    /// Answers every step with success and returns the emitted steps and the final result.
    func testAColdLaunchRunsEveryStepInOrderAndPersists() throws {
        var machine = SessionLifecycle(state: .unattached, hasRestoration: false)
        var effects = machine.handle(.requested(.foregroundActive))
        var performed: [LifecycleStep] = []
        while let (step, attempt) = perform(effects) {
            performed.append(step)
            effects = machine.handle(.stepSucceeded(attempt: attempt))
        }
        XCTAssertEqual(performed, [.launch, .connect, .willEnterForeground, .didBecomeActive])
        XCTAssertEqual(effects.suffix(2), [.persist, .finish(.success([]))])
        XCTAssertEqual(machine.state, .foregroundActive)
        XCTAssertTrue(machine.isFinished)
    }

    /// The transitions carried with willConnect complete with its answer, each recorded in
    /// order as if sent alone; nothing more goes to the scene for them.
    func testStepsCarriedWithWillConnectCompleteWithItsAnswerInOrder() throws {
        var machine = SessionLifecycle(state: .unattached, hasRestoration: false)
        var effects = machine.handle(.requested(.foregroundActive))
        let (_, launch) = try XCTUnwrap(perform(effects))
        effects = machine.handle(.stepSucceeded(attempt: launch))
        let (step, connect) = try XCTUnwrap(perform(effects))
        XCTAssertEqual(step, .connect)
        machine.carry([.didBecomeActive])
        XCTAssertEqual(machine.inFlight?.carried, [], "only the steps that come next, in order, can be carried")
        machine.carry([.willEnterForeground, .didBecomeActive])
        XCTAssertEqual(machine.inFlight?.carried, [.willEnterForeground, .didBecomeActive])
        XCTAssertEqual(machine.remaining, [])
        effects = machine.handle(.stepSucceeded(attempt: connect))
        XCTAssertEqual(effects, [
            .emit(.connect, .launching), .emit(.willEnterForeground, .foregroundInactive), .emit(.didBecomeActive, .foregroundActive),
            .persist, .finish(.success([])),
        ])
        XCTAssertEqual(machine.state, .foregroundActive)
    }

    /// A command that carries steps fails whole: a missed deadline names every callback it
    /// asked for, and the steps it carried are not recorded.
    func testACarriedCommandThatMissesItsDeadlineNamesEveryCallbackAndCompletesNone() throws {
        var machine = SessionLifecycle(state: .background, hasRestoration: false)
        var effects = machine.handle(.requested(.foregroundActive))
        let (step, enter) = try XCTUnwrap(perform(effects))
        XCTAssertEqual(step, .willEnterForeground)
        machine.carry([.didBecomeActive])
        effects = machine.handle(.deadlineMissed(attempt: enter, after: .seconds(10)))
        XCTAssertEqual(effects.first, .kill(.timedOut))
        XCTAssertFalse(effects.contains { if case .emit = $0 { true } else { false } }, "\(effects)")
        guard case .finish(.failure(let error)) = effects.last else { return XCTFail("\(effects)") }
        XCTAssertTrue(error.message.contains("willEnterForeground (with didBecomeActive) within 10 s"), error.message)
        XCTAssertEqual(machine.state, .unattached)
    }

    func testASupersededSceneStopsInactiveBeforeDidBecomeActive() throws {
        var machine = SessionLifecycle(state: .unattached, hasRestoration: false)
        var effects = machine.handle(.requested(.foregroundActive))
        var attempt: UInt64 = 0
        while let (step, next) = perform(effects), step != .didBecomeActive {
            effects = machine.handle(.stepSucceeded(attempt: next))
            attempt = next
        }
        let (_, becoming) = try XCTUnwrap(perform(effects))
        XCTAssertEqual(machine.handle(.superseded(attempt: attempt)), [], "only the step in flight can be superseded")
        effects = machine.handle(.superseded(attempt: becoming))
        XCTAssertEqual(machine.state, .foregroundInactive)
        XCTAssertEqual(effects.first, .persist)
        guard case .finish(.success(let notes)) = effects.last else { return XCTFail("\(effects)") }
        XCTAssertTrue(notes.contains { $0.contains("another scene was activated meanwhile") })
        XCTAssertEqual(machine.handle(.stepSucceeded(attempt: becoming)), [], "a reply to the skipped step is late")
    }

    func testADeadlineMissedInTheMiddleKillsAndFailsWithTimedOut() throws {
        var machine = SessionLifecycle(state: .unattached, hasRestoration: true)
        var effects = machine.handle(.requested(.foregroundActive))
        let (_, launch) = try XCTUnwrap(perform(effects))
        effects = machine.handle(.stepSucceeded(attempt: launch))
        let (_, connect) = try XCTUnwrap(perform(effects))
        effects = machine.handle(.stepSucceeded(attempt: connect))
        let (step, restore) = try XCTUnwrap(perform(effects))
        XCTAssertEqual(step, .restoreInteractionState)
        effects = machine.handle(.deadlineMissed(attempt: restore, after: .seconds(5)))
        XCTAssertEqual(effects.first, .kill(.timedOut))
        guard case .finish(.failure(let error)) = effects.last else { return XCTFail("\(effects)") }
        XCTAssertEqual(error.code, .timedOut)
        XCTAssertTrue(error.message.contains("restoreInteractionState within 5 s"), error.message)
        XCTAssertEqual(machine.state, .unattached)
        XCTAssertTrue(effects.contains(.persist))
    }

    func testALateReplyAfterTheDeadlineChangesNothing() throws {
        var machine = SessionLifecycle(state: .foregroundActive, hasRestoration: false)
        let effects = machine.handle(.requested(.background))
        let (_, resign) = try XCTUnwrap(perform(effects))
        _ = machine.handle(.deadlineMissed(attempt: resign, after: .seconds(1)))
        let before = machine
        XCTAssertEqual(machine.handle(.stepSucceeded(attempt: resign)), [])
        XCTAssertEqual(machine, before)
    }

    func testARepliesForAnEarlierAttemptAreIgnored() throws {
        var machine = SessionLifecycle(state: .background, hasRestoration: false)
        let effects = machine.handle(.requested(.foregroundActive))
        let (_, enter) = try XCTUnwrap(perform(effects))
        XCTAssertEqual(machine.handle(.stepSucceeded(attempt: enter + 7)), [], "not the attempt in flight")
        XCTAssertEqual(machine.inFlight?.step, .willEnterForeground)
    }

    func testTheProcessEndingDuringAStepReapsAndFails() throws {
        var machine = SessionLifecycle(state: .background, hasRestoration: true)
        let effects = machine.handle(.requested(.foregroundActive))
        let (_, enter) = try XCTUnwrap(perform(effects))
        let after = machine.handle(.stepFailed(attempt: enter, BrokerError(.connectionClosed, "eof")))
        XCTAssertEqual(after.first, .reap)
        guard case .finish(.failure(let error)) = after.last else { return XCTFail("\(after)") }
        XCTAssertEqual(error.code, .workerFailed)
        XCTAssertEqual(machine.state, .unattached)
    }

    func testTheProcessEndingBetweenStepsFailsBeforeTheNextOne() throws {
        var machine = SessionLifecycle(state: .foregroundActive, hasRestoration: false)
        var effects = machine.handle(.requested(.background))
        let (_, resign) = try XCTUnwrap(perform(effects))
        effects = machine.handle(.stepSucceeded(attempt: resign))
        XCTAssertEqual(perform(effects)?.0, .didEnterBackground)
        effects = machine.handle(.processEnded)
        guard case .finish(.failure(let error)) = effects.last else { return XCTFail("\(effects)") }
        XCTAssertTrue(error.message.contains("before didEnterBackground"), error.message)
    }

    func testAHangingSaveLosesTheProcessButNotTheCommittedActivity() throws {
        var machine = SessionLifecycle(state: .background, hasRestoration: true)
        let effects = machine.handle(.requested(.reclaimed))
        let (step, save) = try XCTUnwrap(perform(effects))
        XCTAssertEqual(step, .saveRestorationActivity)
        let after = machine.handle(.deadlineMissed(attempt: save, after: .seconds(1)))
        XCTAssertEqual(after.first, .kill(.timedOut))
        guard case .finish(.success(let notes)) = after.last else { return XCTFail("\(after)") }
        XCTAssertTrue(notes.joined().contains("last committed restoration activity is kept"), "\(notes)")
        XCTAssertEqual(machine.state, .unattached)
    }

    func testARefusedActivityIsANoteAndTheReclaimGoesOn() throws {
        var machine = SessionLifecycle(state: .background, hasRestoration: false)
        var effects = machine.handle(.requested(.reclaimed))
        let (_, save) = try XCTUnwrap(perform(effects))
        effects = machine.handle(.restorationNotSaved(attempt: save, BrokerError(.payloadTooLarge, "too large")))
        XCTAssertEqual(perform(effects)?.0, .disconnect)
        XCTAssertEqual(machine.notes, ["too large; there is no earlier saved state"])
        XCTAssertEqual(machine.saveFailure?.code, .payloadTooLarge, "the driver reports it")
    }

    func testARequiredSaveThatFailsEndsTheReclaimWithTheSceneRunning() throws {
        for failure in [SessionLifecycle.Event.restorationNotSaved(attempt: 0, BrokerError(.storageFull, "disk full")),
                        .deadlineMissed(attempt: 0, after: .seconds(5))] {
            var machine = SessionLifecycle(state: .background, hasRestoration: true, requireSave: true)
            let effects = machine.handle(.requested(.reclaimed))
            let (_, save) = try XCTUnwrap(perform(effects))
            let event: SessionLifecycle.Event = switch failure {
            case .restorationNotSaved(_, let error): .restorationNotSaved(attempt: save, error)
            default: .deadlineMissed(attempt: save, after: .seconds(5))
            }
            let after = machine.handle(event)
            XCTAssertFalse(after.contains { if case .kill = $0 { true } else { false } }, "nothing is taken: \(after)")
            XCTAssertNil(perform(after), "no disconnect")
            guard case .finish(.failure(let error)) = after.last else { return XCTFail("\(after)") }
            XCTAssertTrue(error.message.contains("--force"), error.message)
            XCTAssertEqual(machine.state, .background)
        }
    }

    func testAProcessGoneBeforeDisconnectIsWhereTheReclaimWasGoing() throws {
        var machine = SessionLifecycle(state: .background, hasRestoration: true)
        var effects = machine.handle(.requested(.reclaimed))
        let (_, save) = try XCTUnwrap(perform(effects))
        effects = machine.handle(.restorationCommitted(attempt: save))
        XCTAssertEqual(perform(effects)?.0, .disconnect)
        effects = machine.handle(.processEnded)
        XCTAssertEqual(effects.last, .finish(.success([])))
    }

    func testNothingToDoFinishesAtOnceWithoutWriting() {
        var machine = SessionLifecycle(state: .background, hasRestoration: false)
        XCTAssertEqual(machine.handle(.requested(.background)), [.finish(.success([]))])
        XCTAssertEqual(machine.handle(.processEnded), [], "a finished drive takes no more events")
    }
}

final class ActivationRouterTests: XCTestCase {
    private func app(multiple: Bool = true, configurations: [AppManifest.Configuration]? = nil) -> AppManifest {
        AppManifest(
            id: "notes", name: "Notes", executable: "/bin/true", arguments: [], supportsMultipleScenes: multiple,
            configurations: configurations ?? [.init(name: "Editor", role: AppManifest.defaultRole, delegate: "D", canActivate: nil, prefersToActivate: nil)],
            activityTypes: ["notes.edit"], prewarm: 0, source: "test")
    }

    private func session(prefers: [String] = [], lastActive: TimeInterval = 0) -> SceneSession {
        var session = SceneSession(appID: "notes", configuration: "Editor", role: AppManifest.defaultRole, title: "t")
        session.activationConditions = ActivationConditions(canActivate: ["*"], prefersToActivate: prefers)
        session.lastActiveAt = Date(timeIntervalSince1970: lastActive)
        return session
    }

    private func request(target: String? = nil, type: String = "notes.edit", session: SessionID? = nil, new: Bool = false) -> ActivationRequest {
        ActivationRequest(appID: "notes", sessionID: session,
                          activity: UserActivity(activityType: type, targetContentIdentifier: target), forceNew: new)
    }

    func testTheManifestsPrefersToActivateRoutesToAConfigurationAndItsScenes() throws {
        let manifest = app(configurations: [
            .init(name: "Editor", role: AppManifest.defaultRole, delegate: "E", canActivate: nil, prefersToActivate: nil),
            .init(name: "Inbox", role: AppManifest.defaultRole, delegate: "I", canActivate: nil, prefersToActivate: ["inbox-*"]),
        ])
        // A new inbox target gets the configuration that prefers it, not the first one.
        XCTAssertEqual(try ActivationRouter.route(request(target: "inbox-1"), app: manifest, sessions: []),
                       .create(configuration: "Inbox", role: AppManifest.defaultRole))
        XCTAssertEqual(try ActivationRouter.route(request(target: "note-1"), app: manifest, sessions: []),
                       .create(configuration: "Editor", role: AppManifest.defaultRole))
        // A running scene of that configuration is reused for it, though it declared nothing itself.
        var inbox = SceneSession(appID: "notes", configuration: "Inbox", role: AppManifest.defaultRole, title: "t")
        inbox.activationConditions = .default
        guard case .existing(let id, _) = try ActivationRouter.route(request(target: "inbox-2"), app: manifest, sessions: [session(), inbox]) else {
            return XCTFail("expected the inbox scene")
        }
        XCTAssertEqual(id, inbox.id)
    }

    func testUndeclaredActivityTypeIsRefused() {
        XCTAssertThrowsError(try ActivationRouter.route(request(type: "mail.compose"), app: app(), sessions: [])) {
            XCTAssertEqual(($0 as? BrokerError)?.code, .undeclaredActivityType)
        }
    }

    func testAPreferringSceneIsReusedUnlessNewIsForced() throws {
        let preferring = session(prefers: ["note-*"])
        XCTAssertEqual(try ActivationRouter.route(request(target: "note-7"), app: app(), sessions: [session(), preferring]),
                       .existing(preferring.id, reason: "scene prefers to activate 'note-7'"))
        XCTAssertEqual(try ActivationRouter.route(request(target: "note-7", new: true), app: app(), sessions: [preferring]),
                       .create(configuration: "Editor", role: AppManifest.defaultRole))
        XCTAssertEqual(try ActivationRouter.route(request(target: "other"), app: app(), sessions: [preferring]),
                       .create(configuration: "Editor", role: AppManifest.defaultRole))
    }

    func testTheMostRecentlyActivePreferringSceneIsReused() throws {
        let older = session(prefers: ["note-*"], lastActive: 1_000)
        let newer = session(prefers: ["note-*"], lastActive: 2_000)
        let newest = session(lastActive: 3_000)  // prefers nothing
        var otherApp = SceneSession(appID: "mail", configuration: "Editor", role: AppManifest.defaultRole, title: "t")
        otherApp.activationConditions = ActivationConditions(canActivate: ["*"], prefersToActivate: ["note-*"])
        otherApp.lastActiveAt = Date(timeIntervalSince1970: 4_000)
        for sessions in [[older, newer, newest, otherApp], [otherApp, newest, newer, older]] {
            XCTAssertEqual(try ActivationRouter.route(request(target: "note-7"), app: app(), sessions: sessions),
                           .existing(newer.id, reason: "scene prefers to activate 'note-7'"))
        }
        // Equally recent: the first listed.
        let twin = session(prefers: ["note-*"], lastActive: 2_000)
        XCTAssertEqual(try ActivationRouter.route(request(target: "note-7"), app: app(), sessions: [twin, newer]),
                       .existing(twin.id, reason: "scene prefers to activate 'note-7'"))
        // A single-scene app reuses its most recently active scene.
        XCTAssertEqual(try ActivationRouter.route(request(), app: app(multiple: false), sessions: [older, newest, newer]),
                       .existing(newest.id, reason: "app supports a single scene"))
    }

    func testSingleSceneAppsReuseTheirSceneOrRefuseNew() throws {
        let only = session()
        XCTAssertEqual(try ActivationRouter.route(request(), app: app(multiple: false), sessions: [only]),
                       .existing(only.id, reason: "app supports a single scene"))
        XCTAssertThrowsError(try ActivationRouter.route(request(new: true), app: app(multiple: false), sessions: [only])) {
            XCTAssertEqual(($0 as? BrokerError)?.code, .multipleScenesUnsupported)
        }
    }

    func testConfigurationCanActivateLimitsNewScenes() throws {
        let manifest = app(configurations: [
            .init(name: "Viewer", role: AppManifest.defaultRole, delegate: "V", canActivate: ["img-*"], prefersToActivate: nil),
            .init(name: "Editor", role: AppManifest.defaultRole, delegate: "E", canActivate: ["note-*"], prefersToActivate: nil),
        ])
        XCTAssertEqual(try ActivationRouter.route(request(target: "note-1"), app: manifest, sessions: []),
                       .create(configuration: "Editor", role: AppManifest.defaultRole))
        XCTAssertThrowsError(try ActivationRouter.route(request(target: "video-1"), app: manifest, sessions: [])) {
            XCTAssertEqual(($0 as? BrokerError)?.code, .requestDenied)
        }
        var named = request(target: "img-2")
        named.configuration = "Viewer"
        XCTAssertEqual(try ActivationRouter.route(named, app: manifest, sessions: []), .create(configuration: "Viewer", role: AppManifest.defaultRole))
        named.configuration = "Viewer"
        named.activity?.targetContentIdentifier = "note-2"
        XCTAssertThrowsError(try ActivationRouter.route(named, app: manifest, sessions: [])) {
            XCTAssertEqual(($0 as? BrokerError)?.code, .requestDenied, "a named configuration still obeys its canActivate")
        }
        named.configuration = "Missing"
        XCTAssertThrowsError(try ActivationRouter.route(named, app: manifest, sessions: [])) {
            XCTAssertEqual(($0 as? BrokerError)?.code, .invalidRequest)
        }
    }

    func testAnExplicitSessionMustBelongToTheApp() {
        XCTAssertThrowsError(try ActivationRouter.route(request(session: SessionID()), app: app(), sessions: [session()])) {
            XCTAssertEqual(($0 as? BrokerError)?.code, .unknownSession)
        }
    }
}

final class ManifestLoaderTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("wb-manifests-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func write(_ name: String, _ json: String) {
        _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(json.utf8))
    }

    func testBadManifestsAreReportedWithFileFieldAndReasonAndSkipped() {
        write("good.json", #"{"id": "good", "executable": "/bin/true", "activityTypes": ["a.b"]}"#)
        write("no-exe.json", #"{"id": "noexe", "executable": "/nonexistent/app"}"#)
        write("bad-type.json", #"{"id": "typed", "executable": "/bin/true", "supportsMultipleScenes": "yes"}"#)
        write("missing-id.json", #"{"executable": "/bin/true"}"#)
        write("broken.json", "{ not json")
        write("broken-later.json", "{\n  \"id\": \"later\",\n  \"name\": oops\n}")
        write("ignored.txt", "not a manifest")
        let (apps, problems) = ManifestLoader(directories: [directory], helperDirectory: nil, searchPath: []).load()
        XCTAssertEqual(Array(apps.keys), ["good"])
        let byFile = Dictionary(uniqueKeysWithValues: problems.map { (($0.file as NSString).lastPathComponent, $0) })
        XCTAssertEqual(byFile["no-exe.json"]?.field, "executable")
        XCTAssertEqual(byFile["bad-type.json"]?.field, "supportsMultipleScenes")
        XCTAssertEqual(byFile["missing-id.json"]?.field, "id")
        // Where the parser stopped, as an editor counts (lines and columns from 1).
        XCTAssertTrue(byFile["broken.json"]?.reason.hasPrefix("is not valid JSON: line 1, column 3: ") == true, "\(String(describing: byFile["broken.json"]))")
        XCTAssertTrue(byFile["broken-later.json"]?.reason.hasPrefix("is not valid JSON: line 3, column 11: ") == true, "\(String(describing: byFile["broken-later.json"]))")
        XCTAssertNil(byFile["ignored.txt"])
    }

    func testDuplicateIdsAreNamedAndTheRuleIsTheDirectoryOrder() throws {
        write("a.json", #"{"id": "twin", "executable": "/bin/true"}"#)
        write("b.json", #"{"id": "twin", "executable": "/bin/true"}"#)
        let user = directory + "/user"
        try FileManager.default.createDirectory(atPath: user, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: user + "/mine.json", contents: Data(#"{"id": "shared", "executable": "/bin/true"}"#.utf8))
        write("system.json", #"{"id": "shared", "executable": "/bin/true", "name": "System"}"#)
        let (apps, problems) = ManifestLoader(directories: [user, directory], helperDirectory: nil, searchPath: []).load()
        XCTAssertNil(apps["twin"], "two files in one directory: neither silently wins")
        let twins = problems.filter { $0.reason.contains("'twin'") }
        XCTAssertEqual(twins.count, 2)
        XCTAssertTrue(twins.allSatisfy { $0.reason.contains("a.json") && $0.reason.contains("b.json") && !$0.isWarning })
        XCTAssertEqual(apps["shared"]?.source, user + "/mine.json", "the earlier directory (the user's) wins")
        let shadowed = try XCTUnwrap(problems.first { $0.reason.contains("'shared'") })
        XCTAssertTrue(shadowed.isWarning && shadowed.reason.contains("mine.json") && shadowed.file.hasSuffix("system.json"), "\(shadowed)")
    }

    func testADirectoryIsNoExecutableAndHugeManifestsAreNotRead() {
        write("dir.json", #"{"id": "dir", "executable": "/tmp"}"#)
        write("huge.json", #"{"id": "huge", "executable": "/bin/true", "name": ""# + String(repeating: "x", count: 70_000) + #""}"#)
        let (apps, problems) = ManifestLoader(directories: [directory], helperDirectory: nil, searchPath: []).load()
        XCTAssertTrue(apps.isEmpty)
        XCTAssertEqual(problems.first { $0.file.hasSuffix("dir.json") }?.field, "executable")
        XCTAssertTrue(problems.first { $0.file.hasSuffix("huge.json") }?.reason.contains("at most") == true)
    }

    func testUnknownKeysAreWarningsAndTheAppStillLoads() {
        write("typo.json", #"{"id": "typo", "executable": "/bin/true", "supportsMultipleScene": true, "colour": "red", "configurations": [{"name": "Main", "role": "windowApplication", "delegate": "D", "canActivat": ["*"]}]}"#)
        let (apps, problems) = ManifestLoader(directories: [directory], helperDirectory: nil, searchPath: []).load()
        XCTAssertNotNil(apps["typo"])
        XCTAssertEqual(problems.map(\.field), ["colour", "supportsMultipleScene", "configurations[0].canActivat"])
        XCTAssertEqual(problems.map(\.reason), [
            "is not a manifest key; ignored",
            "is not a manifest key; ignored (did you mean 'supportsMultipleScenes'?)",
            "is not a configuration key; ignored (did you mean 'canActivate'?)",
        ])
        XCTAssertTrue(problems.allSatisfy(\.isWarning))
        XCTAssertTrue(problems.allSatisfy { $0.file.hasSuffix("typo.json") })
    }

    func testBareExecutableNamesAreFoundBesideTheBrokerThenOnPath() throws {
        write("app.json", #"{"id": "app", "executable": "true"}"#)
        let loaded = ManifestLoader(directories: [directory], helperDirectory: "/nonexistent", searchPath: ["/usr/bin", "/bin"]).load()
        XCTAssertTrue(loaded.problems.isEmpty, "\(loaded.problems)")
        XCTAssertTrue(loaded.apps["app"]?.executable.hasSuffix("/true") == true)
    }

    /// A name not found says where it was looked for, each place once (issue 66.7: the broker's
    /// directory, also on PATH, was listed twice).
    func testAMissingBareExecutableListsEachPlaceOnce() throws {
        write("app.json", #"{"id": "app", "executable": "no-such-program"}"#)
        let loaded = ManifestLoader(directories: [directory], helperDirectory: "/opt/wb/bin", searchPath: ["/opt/wb/bin/", "/usr/bin"]).load()
        let reason = try XCTUnwrap(loaded.problems.first?.reason)
        XCTAssertTrue(reason.contains("looked at /opt/wb/bin/no-such-program, /usr/bin/no-such-program)"), reason)
    }
}

final class AppRegistryTests: XCTestCase {
    func testPendingDiscardsAreClaimedOnceAndComeBackInFrontWhenTheConnectionFails() {
        let (a, b, c) = (SessionID(), SessionID(), SessionID())
        var registry = AppRegistry(pendingDiscards: ["notes": [a]])
        registry.addPendingDiscard(b, of: "notes")
        registry.addPendingDiscard(c, of: "tally")
        let claimed = registry.claimPendingDiscards(of: "notes")
        XCTAssertEqual(claimed, [a, b], "oldest first")
        XCTAssertEqual(registry.claimPendingDiscards(of: "notes"), [], "a second scene connecting meanwhile gets none")
        registry.addPendingDiscard(c, of: "notes")
        registry.returnPendingDiscards(claimed, of: "notes")
        XCTAssertEqual(registry.claimPendingDiscards(of: "notes"), [a, b, c], "given back in front of newer ones")
        XCTAssertEqual(registry.claimPendingDiscards(of: "tally"), [c], "per app")
    }

    func testAnUnknownAppIsAnErrorThatNamesTheKnownOnes() throws {
        var registry = AppRegistry()
        XCTAssertThrowsError(try registry.manifest("notes")) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .unknownApp)
            XCTAssertTrue("\(error)".contains("known: none"), "\(error)")
        }
        registry.manifests["tally"] = AppManifest(
            id: "tally", name: "Tally", executable: "/bin/true", arguments: [], supportsMultipleScenes: true,
            configurations: [], activityTypes: [], prewarm: 0, source: "tally.json")
        XCTAssertThrowsError(try registry.mainMenu("notes")) { error in
            XCTAssertTrue("\(error)".contains("known: tally"), "\(error)")
        }
        XCTAssertEqual(try registry.mainMenu("tally"), MainMenu.system, "no runtime change: the manifest's menu")
    }

    /// A reload that finds a good manifest broken keeps its last good version (with a warning
    /// saying so), unless a directory that ranks higher now has one; a good one replaces it.
    func testABrokenManifestKeepsItsLastGoodVersionUnlessAHigherDirectoryHasOne() {
        func manifest(_ id: AppID, _ source: String) -> AppManifest {
            AppManifest(id: id, name: "\(id)", executable: "/bin/true", arguments: [], supportsMultipleScenes: true,
                        configurations: [], activityTypes: [], prewarm: 0, source: source)
        }
        let rank = { (file: String) in file.hasPrefix("/user/") ? 0 : file.hasPrefix("/system/") ? 1 : 2 }
        var registry = AppRegistry()
        _ = registry.install(["notes": manifest("notes", "/system/notes.json")], problems: [], rank: rank)

        let broken = ManifestProblem(file: "/system/notes.json", field: "executable", reason: "missing")
        var problems = registry.install([:], problems: [broken], rank: rank)
        XCTAssertEqual(registry.manifests["notes"]?.source, "/system/notes.json", "kept: the file is broken, not removed")
        XCTAssertEqual(problems.count, 2)
        XCTAssertTrue(problems.last?.isWarning == true && problems.last?.reason.contains("last good version") == true, "\(problems)")

        // A lower directory's manifest of the same id does not take over while it is broken.
        problems = registry.install(["notes": manifest("notes", "/other/notes.json")], problems: [broken], rank: rank)
        XCTAssertEqual(registry.manifests["notes"]?.source, "/system/notes.json")
        // A higher one does.
        problems = registry.install(["notes": manifest("notes", "/user/notes.json")], problems: [broken], rank: rank)
        XCTAssertEqual(registry.manifests["notes"]?.source, "/user/notes.json")
        XCTAssertEqual(problems, [broken])
        // A file removed without an error uninstalls the app.
        problems = registry.install([:], problems: [], rank: rank)
        XCTAssertNil(registry.manifests["notes"])
        XCTAssertEqual(problems, [])
    }
}

final class StartLimitTests: XCTestCase {
    func testABurstWithinTheIntervalStartsALoopThatDoublesInARow() {
        var limit = StartLimit(burst: 3, interval: .seconds(10))
        let t0 = ContinuousClock.now
        limit.recordFailure("a", now: t0)
        limit.recordFailure("a", now: t0 + .seconds(1))
        XCTAssertNil(limit.retryAfter("a", now: t0 + .seconds(1)))
        limit.recordFailure("a", now: t0 + .seconds(2))
        XCTAssertEqual(limit.retryAfter("a", now: t0 + .seconds(2)), .seconds(10))
        XCTAssertNil(limit.retryAfter("b", now: t0 + .seconds(2)), "per app")
        XCTAssertNil(limit.retryAfter("a", now: t0 + .seconds(13)), "over after the wait")
        for i in 0..<3 { limit.recordFailure("a", now: t0 + .seconds(20 + i)) }
        XCTAssertEqual(limit.retryAfter("a", now: t0 + .seconds(22)), .seconds(20), "the second loop in a row waits twice as long")
        limit.recordSuccess("a")
        for i in 0..<3 { limit.recordFailure("a", now: t0 + .seconds(60 + i)) }
        XCTAssertEqual(limit.retryAfter("a", now: t0 + .seconds(62)), .seconds(10), "a scene that connected ended the streak")
    }

    func testFailuresSpreadOutNeverLoop() {
        var limit = StartLimit(burst: 3, interval: .seconds(10))
        let t0 = ContinuousClock.now
        for i in 0..<10 { limit.recordFailure("a", now: t0 + .seconds(6 * i)) }
        XCTAssertNil(limit.retryAfter("a", now: t0 + .seconds(54)))
    }
}

/// Launch admission: the slot is taken with the check, launches under way count against the
/// limit until they finish, and each refusal says why in words a user can act on.
final class LaunchAdmissionTests: XCTestCase {
    private let t0 = ContinuousClock.now

    private func refusal(_ body: () throws -> Void) -> BrokerError? {
        do { try body(); return nil } catch { return error as? BrokerError }
    }

    func testLaunchesUnderWayCountAgainstTheLimitUntilTheyFinish() {
        var launches = LaunchAdmission(startLimit: StartLimit(burst: 3, interval: .seconds(10)), maxLiveWorkers: 3)
        XCTAssertNil(refusal { try launches.admit("a", live: 1, stopping: false, now: t0) })
        XCTAssertNil(refusal { try launches.admit("b", live: 1, stopping: false, now: t0) })
        XCTAssertEqual(launches.inFlight, 2)
        let full = refusal { try launches.admit("a", live: 1, stopping: false, now: t0) }
        XCTAssertEqual(full?.code, .resourceExhausted)
        XCTAssertTrue(full?.message.contains("limit 3") ?? false, full?.message ?? "")
        XCTAssertEqual(launches.inFlight, 2, "a refused launch takes no slot")
        launches.finished()
        XCTAssertNil(refusal { try launches.admit("a", live: 1, stopping: false, now: t0) }, "a finished launch gives its slot back")
    }

    func testAnIdleProcessNeverTakesTheLastRoom() {
        var launches = LaunchAdmission(startLimit: StartLimit(burst: 3, interval: .seconds(10)), maxLiveWorkers: 4)
        XCTAssertTrue(launches.hasRoomForIdle(live: 1, idle: 1))
        XCTAssertNil(refusal { try launches.admit("a", live: 1, stopping: false, now: t0) })
        XCTAssertFalse(launches.hasRoomForIdle(live: 1, idle: 2), "live, under way and idle together stay under the limit")
    }

    func testACrashLoopAndAStopRefuseWithWhyAndWhen() {
        var launches = LaunchAdmission(startLimit: StartLimit(burst: 2, interval: .seconds(10)), maxLiveWorkers: 8)
        launches.recordFailure("a", now: t0)
        launches.recordFailure("a", now: t0 + .seconds(1))
        let looping = refusal { try launches.check("a", live: 0, stopping: false, now: t0 + .seconds(1)) }
        XCTAssertEqual(looping?.code, .crashLoop)
        XCTAssertEqual(looping?.message, "app 'a' failed to start or crashed 2 times within 10 s; new scenes are refused for another 10 s")
        XCTAssertNil(refusal { try launches.check("b", live: 0, stopping: false, now: t0 + .seconds(1)) }, "per app")
        launches.recordSuccess("a")
        XCTAssertNotNil(launches.retryAfter("a", now: t0 + .seconds(2)), "a connected scene ends the streak, not the wait")
        XCTAssertNil(launches.retryAfter("a", now: t0 + .seconds(12)))
        XCTAssertEqual(refusal { try launches.check("b", live: 0, stopping: true, now: t0) }?.code, .requestDenied)
    }
}

final class UpdateQueueTests: XCTestCase {
    private func drain(_ queue: inout UpdateQueue<String>) -> [String] {
        var out: [String] = []
        while let next = queue.next() {
            switch next {
            case .item(let sequence, let item): out.append("\(sequence):\(item)")
            case .dropped(let range): out.append("dropped \(range.lowerBound)...\(range.upperBound)")
            }
        }
        return out
    }

    func testDeliversInOrderWithinCapacity() {
        var queue = UpdateQueue<String>(capacity: 3)
        XCTAssertNil(queue.enqueue(1, "a"))
        XCTAssertNil(queue.enqueue(2, "b"))
        XCTAssertNil(queue.enqueue(3, "c"))
        XCTAssertEqual(drain(&queue), ["1:a", "2:b", "3:c"])
        XCTAssertTrue(queue.isEmpty)
    }

    func testOverflowDropsTheBacklogForOneNoticeBeforeLaterUpdates() throws {
        var queue = UpdateQueue<String>(capacity: 2)
        _ = queue.enqueue(1, "a")
        _ = queue.enqueue(2, "b")
        let overflow = try XCTUnwrap(queue.enqueue(3, "c"))
        XCTAssertEqual(overflow.sequences, [1, 2, 3])
        XCTAssertTrue(overflow.newNotice)
        XCTAssertNil(queue.enqueue(4, "d"))
        XCTAssertEqual(drain(&queue), ["dropped 1...3", "4:d"])
    }

    func testOverflowingAgainWidensTheSameNotice() throws {
        var queue = UpdateQueue<String>(capacity: 1)
        _ = queue.enqueue(1, "a")
        XCTAssertEqual(queue.enqueue(2, "b")?.newNotice, true)
        _ = queue.enqueue(3, "c")
        let again = try XCTUnwrap(queue.enqueue(4, "d"))
        XCTAssertFalse(again.newNotice, "one notice until it is delivered")
        XCTAssertEqual(again.range, 1...4)
        XCTAssertEqual(drain(&queue), ["dropped 1...4"])
        // Delivered: the next overflow is a new notice.
        _ = queue.enqueue(5, "e")
        XCTAssertEqual(queue.enqueue(6, "f")?.newNotice, true)
    }
}

final class SearchQueryTests: XCTestCase {
    func testWordsAreQuotedAndAllRequired() throws {
        XCTAssertEqual(try SearchQuery.match("packing list"), "\"packing\" AND \"list\"")
        XCTAssertEqual(try SearchQuery.match("  Pack*  "), "\"pack\"*")
    }

    func testNothingTypedIsQuerySyntax() throws {
        XCTAssertEqual(try SearchQuery.match("a\"b OR (c"), "\"a\"\"b\" AND \"or\" AND \"(c\"")
        XCTAssertThrowsError(try SearchQuery.match("*** ( )"))
        XCTAssertThrowsError(try SearchQuery.match(""))
    }

    func testSharpSAndDoubleSAreOneSpelling() throws {
        XCTAssertEqual(try SearchQuery.match("Reisepaß"), "(\"reisepass\" OR \"reisepaß\")")
        XCTAssertEqual(try SearchQuery.match("reisepass"), "(\"reisepass\" OR \"reisepaß\")")
        XCTAssertEqual(SearchQuery.variants("bus"), ["bus"])
    }

    func testUserInfoTextTakesEveryNestedString() {
        let text = SearchIndex.text(of: ["a": .string("one"), "b": .list([.string("two"), .integer(3)]), "c": .dictionary(["d": .string("four")])])
        XCTAssertEqual(text, "one\ntwo\nfour")
    }
}

final class KeyShortcutTests: XCTestCase {
    func testSpellingsOfOneShortcutAreOne() throws {
        XCTAssertEqual(try KeyShortcut(parsing: "Shift+Ctrl+U"), try KeyShortcut(parsing: "ctrl+shift+u"))
        XCTAssertEqual(try KeyShortcut(parsing: "control+meta+Tab").description, "ctrl+alt+tab")
        XCTAssertEqual(try KeyShortcut(parsing: "win+grave").description, "super+grave")
        XCTAssertEqual(try KeyShortcut(parsing: "F12").description, "f12")
    }

    func testWhatIsNotAShortcutIsRefused() {
        XCTAssertThrowsError(try KeyShortcut(parsing: "u"), "a plain letter would take the key from typing")
        XCTAssertThrowsError(try KeyShortcut(parsing: "hyper+u"))
        XCTAssertThrowsError(try KeyShortcut(parsing: "ctrl+ctrl+u"))
        XCTAssertThrowsError(try KeyShortcut(parsing: "ctrl+"))
        XCTAssertThrowsError(try KeyShortcut(parsing: "ctrl+é"))
        // Issue 24: these used to be accepted.
        XCTAssertThrowsError(try KeyShortcut(parsing: "ctrl+notakey"), "not an xkb key name")
        XCTAssertThrowsError(try KeyShortcut(parsing: "shift+x"), "shift alone types a capital")
        XCTAssertThrowsError(try KeyShortcut(parsing: "shift+comma"))
        XCTAssertNoThrow(try KeyShortcut(parsing: "shift+f5"))
        XCTAssertNoThrow(try KeyShortcut(parsing: "ctrl+page_down"))
        XCTAssertNoThrow(try KeyShortcut(parsing: "shift+tab"))
    }
}

final class MainMenuTests: XCTestCase {
    private func command(_ id: String, _ shortcut: String? = nil) throws -> MenuElement {
        .command(MenuCommand(id: id, title: id, shortcut: try shortcut.map { try KeyShortcut(parsing: $0) }))
    }

    private func childIDs(_ menu: MainMenu, _ id: String) -> [String] {
        menu.menus.first { $0.id == id }?.children.map(\.id) ?? []
    }

    func testTheSystemMenuHasTheFixedMenusAndReservedShortcuts() {
        XCTAssertEqual(MainMenu.system.menus.map(\.id), ["application", "file", "edit", "view", "window", "help"])
        XCTAssertEqual(MainMenu.system.command(for: try! KeyShortcut(parsing: "ctrl+c"))?.id, "edit.copy")
        XCTAssertEqual(MainMenu.system.command(id: "file.closeWindow")?.systemAction, .closeWindow)
        XCTAssertNil(MainMenu.system.command(id: "edit.copy")?.systemAction, "copy is the responders' to perform")
    }

    func testInsertChildAndSiblingPlaceElements() throws {
        var menu = MainMenu.system
        try menu.insert(try command("a"), at: .child(of: "edit", atStart: true))
        try menu.insert(try command("z"), at: .child(of: "edit", atStart: false))
        try menu.insert(try command("b"), at: .sibling(of: "a", before: false))
        try menu.insert(.menu(Menu(id: "tools", title: "Tools")), at: .sibling(of: "view", before: false))
        try menu.insert(.menu(Menu(id: "sub", title: "Sub", children: [try command("s", "ctrl+alt+s")])), at: .child(of: "tools", atStart: false))
        XCTAssertEqual(childIDs(menu, "edit").prefix(2), ["a", "b"])
        XCTAssertEqual(childIDs(menu, "edit").last, "z")
        XCTAssertEqual(menu.menus.map(\.id), ["application", "file", "edit", "view", "tools", "window", "help"])
        XCTAssertEqual(menu.command(for: try KeyShortcut(parsing: "ctrl+alt+s"))?.id, "s")
    }

    func testCollisionsAreRefusedWholeNamingBothSides() throws {
        var menu = MainMenu.system
        XCTAssertThrowsError(try menu.insert(try command("edit.copy"), at: .child(of: "edit", atStart: false))) {
            XCTAssertTrue("\($0)".contains("already used by the command 'edit.copy'"))
        }
        XCTAssertThrowsError(try menu.insert(try command("mine", "ctrl+c"), at: .child(of: "edit", atStart: false))) {
            XCTAssertTrue("\($0)".contains("system command 'edit.copy'"))
        }
        // A menu whose second command collides: nothing of it is inserted.
        let before = menu
        let bundle = MenuElement.menu(Menu(id: "m", title: "M", children: [try command("ok", "ctrl+k"), try command("bad", "ctrl+v")]))
        XCTAssertThrowsError(try menu.insert(bundle, at: .child(of: "view", atStart: false)))
        XCTAssertEqual(menu, before)
        XCTAssertThrowsError(try menu.insert(try command("x"), at: .child(of: "edit.copy", atStart: false))) {
            XCTAssertTrue("\($0)".contains("is a command, not a menu"))
        }
        XCTAssertThrowsError(try menu.insert(try command("y"), at: .sibling(of: "file", before: true)), "only menus stand at the top")
        XCTAssertThrowsError(try menu.remove(id: "edit.copy"), "the system's elements stay")
    }

    func testBuildKeepsWhatLoadsAndReportsTheRest() throws {
        let (menu, errors) = MainMenu.build([
            MenuInsertion(element: try command("one", "ctrl+1"), placement: .child(of: "file", atStart: false)),
            MenuInsertion(element: try command("two", "ctrl+1"), placement: .child(of: "file", atStart: false)),
            MenuInsertion(element: try command("three"), placement: .child(of: "nowhere", atStart: false)),
        ])
        XCTAssertEqual(errors.map(\.element), ["two", "three"])
        XCTAssertEqual(menu.command(id: "one")?.shortcut?.description, "ctrl+1")
    }
}

/// The session queues run work in the order its place was taken, not the order it asks for
/// its turn: a focus change handed to a task keeps the place it got when it was decided.
final class SerialQueuesTests: XCTestCase {
    func testATicketTakenEarlierRunsFirstEvenWhenItAsksLater() {
        var queues = SerialQueues<String>()
        let first = queues.take("s")
        let second = queues.take("s")
        XCTAssertFalse(queues.tryEnter("s", ticket: second), "the earlier ticket has not run yet")
        XCTAssertTrue(queues.tryEnter("s", ticket: first))
        queues.leave("s")
        XCTAssertTrue(queues.tryEnter("s", ticket: second))
        queues.leave("s")
        let again = queues.take("s")
        XCTAssertTrue(queues.tryEnter("s", ticket: again), "an idle key runs at once")
        queues.leave("s")
    }
}

/// Issue 19, hazard 6: blocking work leaves the event loops (which are the broker's executor).
final class RecentDiscardsTests: XCTestCase {
    /// Only the newest discards are kept: the oldest goes when one more comes at capacity, and a
    /// session discarded twice counts once.
    func testTheNewestDiscardsAreKeptAndTheOldestGoesFirst() {
        var discards = RecentDiscards()
        let ids = (0...RecentDiscards.capacity).map { _ in SessionID() }
        for id in ids { discards.insert(id) }
        discards.insert(ids[5])
        XCTAssertEqual(discards.count, RecentDiscards.capacity)
        XCTAssertFalse(discards.contains(ids[0]), "the oldest went")
        XCTAssertTrue(discards.contains(ids[1]))
        XCTAssertTrue(discards.contains(ids[RecentDiscards.capacity]))
        XCTAssertEqual(discards.first(withPrefix: String(ids[7].description.prefix(36))), ids[7])
        XCTAssertNil(discards.first(withPrefix: ids[0].description))
    }
}

final class OffLoopTests: XCTestCase {
    func testBlockingWorkRunsOnThePoolNotOnAnEventLoop() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let onLoop = try await loop.submit { MultiThreadedEventLoopGroup.currentEventLoop != nil }.get()
        XCTAssertTrue(onLoop, "the check itself can tell")
        let ranOnLoop = try await loop.makeFutureWithTask { try await OffLoop.run { MultiThreadedEventLoopGroup.currentEventLoop != nil } }.get()
        XCTAssertFalse(ranOnLoop)
    }
}

final class ErrorCodeTests: XCTestCase {
    /// Every code keeps its name through text (wmctl --json) and through the wire; the three
    /// that exist only on one side (a closed connection, no broker, an internal fault) travel
    /// as `internal`.
    func testEveryCodeRoundTripsByNameAndOverTheWire() {
        let localOnly: Set<BrokerError.Code> = [.connectionClosed, .brokerUnreachable, .internalError]
        XCTAssertEqual(BrokerError.Code.allCases.count, 23)
        for code in BrokerError.Code.allCases {
            XCTAssertEqual(BrokerError.Code(rawValue: code.rawValue), code)
            let error = BrokerError(code, "m")
            XCTAssertEqual(BrokerError(wire: error.wire).code, localOnly.contains(code) ? .internalError : code, "\(code)")
        }
        XCTAssertNil(BrokerError.Code(rawValue: "someCodeOfALaterVersion"))
        XCTAssertEqual("\(BrokerError.Code.unknownSession)", "unknownSession")
    }
}

/// The thumbnails a scene hands over with its snapshot: checked as pictures are, and small; kept
/// on disk only beside their session's picture.
final class SnapshotThumbnailTests: XCTestCase {
    /// A PNG signature and IHDR of `width` x `height`, padded to `bytes`.
    private func png(_ width: Int, _ height: Int, bytes: Int = 64) -> Data {
        var data = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
        for value in [width, height] { data.append(contentsOf: withUnsafeBytes(of: UInt32(value).bigEndian, Array.init)) }
        data.append(Data(count: max(0, bytes - data.count)))
        return data
    }

    func testAThumbnailIsAPNGOfAtMost256PixelsASideAnd64KiB() throws {
        XCTAssertEqual(try SnapshotStore.validatedThumbnail(png(244, 133)), .init(width: 244, height: 133, bytes: 64))
        XCTAssertThrowsError(try SnapshotStore.validatedThumbnail(png(1276, 693))) { error in
            XCTAssertTrue((error as? BrokerError)?.message.contains("1276x693 (at most 256 a side)") == true, "\(error)")
        }
        XCTAssertThrowsError(try SnapshotStore.validatedThumbnail(png(200, 100, bytes: 65 * 1024))) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .payloadTooLarge)
        }
        XCTAssertThrowsError(try SnapshotStore.validatedThumbnail(Data("not a picture at all, but long enough".utf8))) { error in
            XCTAssertTrue((error as? BrokerError)?.message.contains("not a PNG") == true, "\(error)")
        }
    }

    func testAThumbnailIsKeptOnlyBesideItsSessionsPicture() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnails-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let store = SnapshotStore(stateDirectory: state)
        let (kept, orphan, pictureless, broken) = (SessionID(), SessionID(), SessionID(), SessionID())
        try store.save(png(1276, 693), thumbnail: png(244, 133), for: kept)
        try store.save(png(640, 480), thumbnail: png(205, 154), for: orphan)
        try store.save(png(640, 480), thumbnail: png(10, 10), for: pictureless)
        try FileManager.default.removeItem(atPath: store.path(pictureless))
        try store.save(png(640, 480), thumbnail: nil, for: broken)
        try Data("junk".utf8).write(to: URL(fileURLWithPath: store.thumbnailPath(broken)))

        let found = store.reconcile(with: [kept, pictureless, broken])
        XCTAssertEqual(found[kept]?.thumbnail, .init(width: 244, height: 133, bytes: 64))
        XCTAssertEqual(found[broken]?.width, 640)
        XCTAssertNil(found[broken]?.thumbnail, "a thumbnail that is not one is not kept")
        XCTAssertNil(found[pictureless], "no picture, nothing kept")
        for (id, exists) in [(kept, true), (orphan, false), (pictureless, false), (broken, false)] {
            XCTAssertEqual(FileManager.default.fileExists(atPath: store.thumbnailPath(id)), exists, "\(id)")
        }
        XCTAssertEqual(try store.load(kept, thumbnail: true), png(244, 133))
        // A picture saved without a thumbnail takes the old one away.
        try store.save(png(1276, 693), thumbnail: nil, for: kept)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store.thumbnailPath(kept)))
        store.delete(kept)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store.path(kept)))
    }
}

final class StoredConditionsTests: XCTestCase {
    /// The hand-written JSON reads back as what was stored, whatever the patterns hold, and as
    /// `JSONEncoder`'s did (stores written before keep loading).
    func testActivationConditionsRoundTripThroughTheStoredJSON() throws {
        let tricky = ["*", "", "note-\"quoted\"", "back\\slash", "line\nbreak\ttab", "\u{1}\u{1F}", "a/b", "ünï 🦊", "{\"not\":\"json\"}"]
        for conditions in [ActivationConditions.default, ActivationConditions(canActivate: [], prefersToActivate: []),
                           ActivationConditions(canActivate: tricky, prefersToActivate: tricky.reversed())] {
            let stored = SessionStore.stored(conditions)
            XCTAssertEqual(try JSONDecoder().decode(ActivationConditions.self, from: stored), conditions,
                           String(decoding: stored, as: UTF8.self))
            let viaFoundation = try JSONSerialization.jsonObject(with: stored) as? [String: [String]]
            XCTAssertEqual(viaFoundation, ["canActivate": conditions.canActivate, "prefersToActivate": conditions.prefersToActivate])
            // What the encoder wrote before reads the same.
            let old = try JSONEncoder().encode(conditions)
            XCTAssertEqual(try JSONDecoder().decode(ActivationConditions.self, from: old), conditions)
        }
    }
}

/// What the broker keeps of a stored session that is not running (it keeps one per session).
final class StoredSessionFootprintTests: XCTestCase {
    /// The saved activities sit behind a pointer: inline they were 353 of the record's 536
    /// bytes, paid by every stored session whether its activities were in memory or not.
    func testASessionsSavedActivitiesAreNotInline() {
        XCTAssertLessThan(MemoryLayout<SceneSession>.size, MemoryLayout<SavedActivities>.size,
                          "SceneSession holds SavedActivities inline again")
    }

    /// Released, a session keeps whether it had a restoration activity (the switcher lists
    /// it) and nothing else of them; its equality follows what it holds.
    func testReleasingTheActivitiesKeepsWhetherARestorationWasSaved() {
        var session = SceneSession(appID: "notes", configuration: "Editor", role: "windowApplication", title: "t")
        XCTAssertFalse(session.hasRestoration)
        session.saved?.restoration = UserActivity(activityType: "notes.edit")
        let loaded = session
        session.releaseSaved()
        XCTAssertNil(session.saved)
        XCTAssertTrue(session.hasRestoration)
        XCTAssertNotEqual(session, loaded)
        session.saved = loaded.saved
        XCTAssertEqual(session.saved, loaded.saved)
    }
}

final class ChildEnvironmentTests: XCTestCase {
    func testOwnVariablesReplaceInheritedOnesAndTheBlockMatchesTheAssignments() {
        let base = ChildEnvironment(inheriting: ["PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8"])
        XCTAssertEqual(base.assignments, ["HOME=/home/u", "LANG=C.UTF-8", "PATH=/usr/bin"], "inherited ones sorted")

        let child = base.setting("WINDOWBROKER_FD", "3").setting("HOME", "/tmp/h").setting("LANG", nil)
            .setting("WINDOWBROKER_SESSION", nil).setting("WINDOWBROKER_FD", "4")
        XCTAssertEqual(child.assignments, ["PATH=/usr/bin", "HOME=/tmp/h", "WINDOWBROKER_FD=4"])
        XCTAssertEqual(base.assignments.count, 3, "setting makes a new environment")

        for environment in [base, child, base.setting("TERM", "xterm")] {
            let expected: [UInt8] = environment.assignments.flatMap { Array($0.utf8) + [UInt8(0)] }
            XCTAssertEqual(environment.block, expected)
        }
    }
}
