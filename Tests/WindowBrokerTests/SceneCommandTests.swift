import Foundation
import IPCWire
import XCTest

@testable import WindowBroker

/// The worker edge's domain commands as the SDK reads them: the one place they become wire.
final class SceneCommandTests: XCTestCase {
    func testATransitionCarriesItsFollowersAndOnlyTheParentItWasGiven() throws {
        let command = SceneCommand.transition(.init(
            step: .willEnterForeground, prominent: true, parentWindowHandle: "parent-handle",
            then: [.init(step: .didBecomeActive, prominent: true, parentWindowHandle: nil)]))
        guard case .transition(let wire) = command.wire else { return XCTFail("not a transition: \(command.wire)") }
        XCTAssertEqual(wire.transition, .willEnterForeground)
        XCTAssertTrue(wire.prominent)
        XCTAssertEqual(wire.parentWindowHandle, "parent-handle")
        XCTAssertEqual(wire.then.map(\.transition), [.didBecomeActive])
        XCTAssertEqual(wire.then.first?.parentWindowHandle, "")
        XCTAssertEqual(wire.then.first?.then.count, 0)
        guard case .transition(let background) = SceneCommand.transition(.init(step: .didEnterBackground, prominent: false)).wire else {
            return XCTFail("not a transition")
        }
        XCTAssertEqual(background.transition, .didEnterBackground)
        XCTAssertFalse(background.prominent)
    }

    func testConnectSaysWhatTheSceneStartsFrom() throws {
        let session = SceneSession(appID: "notes", configuration: "Editor", role: "windowApplication", title: "Groceries")
        let status = SessionStatus(session: session, pid: 42, pss: 0, isKey: false, hasSnapshot: true, crashLoopRetryAfter: nil)
        let gone = SessionID()
        let restoration = UserActivity(activityType: "notes.edit", title: "Groceries", userInfo: ["noteID": .string("n1")])
        let command = SceneCommand.connect(.init(
            session: status, isNew: false, delegateName: "EditorDelegate", discardedSessions: [gone], activities: [],
            restoration: restoration, availableConfigurations: ["Library", "Editor"], defaults: ["theme": .string("dark")],
            storage: [:], updateSequence: 7, then: [.init(step: .willEnterForeground, prominent: false)], placeholderPNG: Data([1, 2, 3])))
        guard case .connect(let wire) = command.wire else { return XCTFail("not a connect: \(command.wire)") }
        XCTAssertEqual(wire.session.id, session.id.description)
        XCTAssertFalse(wire.newSession)
        XCTAssertEqual(wire.delegateName, "EditorDelegate")
        XCTAssertEqual(wire.discardedSessionIds, [gone.description])
        XCTAssertEqual(try UserActivity(wire: wire.restorationActivity, maxBytes: 1 << 20), restoration)
        XCTAssertEqual(wire.availableConfigurations, ["Library", "Editor"])
        XCTAssertEqual(wire.updateSequence, 7)
        XCTAssertEqual(wire.then.map(\.transition), [.willEnterForeground])
        XCTAssertEqual(wire.placeholderPng, Data([1, 2, 3]))
        // Without a restoration or a picture, neither is sent.
        guard case .connect(let bare) = SceneCommand.connect(.init(
            session: status, isNew: true, delegateName: "", discardedSessions: [], activities: [], restoration: nil,
            availableConfigurations: [], defaults: [:], storage: [:], updateSequence: 0, then: [], placeholderPNG: nil)).wire else {
            return XCTFail("not a connect")
        }
        XCTAssertTrue(bare.newSession)
        XCTAssertFalse(bare.hasRestorationActivity)
        XCTAssertTrue(bare.placeholderPng.isEmpty)
    }

    func testDisconnectAndRestoreSayWhyAndWhat() throws {
        guard case .disconnect(let disconnect) = SceneCommand.disconnect(reason: .memoryPressure, discarded: true).wire else {
            return XCTFail("not a disconnect")
        }
        XCTAssertEqual(disconnect.reason, "memoryPressure")
        XCTAssertTrue(disconnect.discarded)
        let activity = UserActivity(activityType: "notes.edit", title: "Back")
        guard case .restoreInteractionState(let restore) = SceneCommand.restoreInteractionState(activity).wire else {
            return XCTFail("not a restore")
        }
        XCTAssertEqual(try UserActivity(wire: restore.activity, maxBytes: 1 << 20), activity)
        guard case .restorationActivityRequest = SceneCommand.restorationActivity.wire else { return XCTFail("not a request") }
    }
}
