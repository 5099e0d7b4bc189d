import Foundation
import IPCWire
import XCTest

/// The broker's own behaviour, each body written once and run twice: against the broker in
/// this process with fake scenes, and against the real windowbrokerd with real scene processes
/// (`BrokerUnderTest`). What differs between the two runs is the scenes, never the rules.
final class SharedBehaviourTests: XCTestCase {
    /// A session outlives its process: reclaimed, it stays in the list, unattached, and comes
    /// back in a new process when activated.
    static func aSessionOutlivesItsProcess(_ broker: SharedClient) async throws {
        let opened = try await broker.open()
        XCTAssertEqual(opened.state, .foregroundActive)
        XCTAssertTrue(opened.created)
        XCTAssertEqual(opened.launch, .spawned)
        let id = opened.sessionID
        let firstPID = try await broker.session(id).pid
        XCTAssertNotEqual(firstPID, 0)

        let background = try await broker.background(id)
        XCTAssertEqual(background.state, .background)
        let reclaimed = try await broker.reclaim(id)
        XCTAssertEqual(reclaimed.state, .unattached)
        let stored = try await broker.session(id)
        XCTAssertEqual(stored.pid, 0, "no process")
        XCTAssertEqual(stored.lastDisconnect, "reclaimed")

        let back = try await broker.activate(id)
        XCTAssertEqual(back.state, .foregroundActive)
        XCTAssertFalse(back.created)
        XCTAssertEqual(back.launch, .spawned)
        let relaunched = try await broker.session(id)
        XCTAssertEqual(relaunched.launchCount, 2)
        XCTAssertNotEqual(relaunched.pid, 0)
        XCTAssertNotEqual(relaunched.pid, firstPID, "a new process")
        XCTAssertTrue(relaunched.key, "the activated scene has the keyboard")
    }

    /// Two scenes share the foreground; a third sends the one active longest ago to the
    /// background, and the key goes with each activation.
    static func theForegroundHoldsTwoScenesAndTheNewestHasTheKey(_ broker: SharedClient) async throws {
        let a = try await broker.open().sessionID
        let b = try await broker.open().sessionID
        let c = try await broker.open().sessionID
        var sessions = try await broker.sessions()
        func state(_ id: String) -> Windowbroker_V1_SceneState? { sessions.first { $0.id == id }?.state }
        XCTAssertEqual(state(a), .background, "the oldest left the foreground")
        XCTAssertEqual(state(b), .foregroundActive)
        XCTAssertEqual(state(c), .foregroundActive)
        XCTAssertEqual(sessions.filter(\.key).map(\.id), [c])

        _ = try await broker.activate(a)
        sessions = try await broker.sessions()
        XCTAssertEqual(state(a), .foregroundActive)
        XCTAssertEqual(state(b), .background, "b was active longest ago now")
        XCTAssertEqual(state(c), .foregroundActive)
        XCTAssertEqual(sessions.filter(\.key).map(\.id), [a])
    }

    /// Refused requests get the error a user can act on and change nothing; a closed session
    /// is gone for good.
    static func refusedRequestsChangeNothing(_ broker: SharedClient) async throws {
        let kept = try await broker.open().sessionID
        let unknown = await broker.refusal { try await broker.activate(UUID().uuidString) }
        XCTAssertEqual(unknown?.code, .unknownSession, "\(String(describing: unknown))")
        let noApp = await broker.refusal { try await broker.open(app: "not-installed") }
        XCTAssertEqual(noApp?.code, .unknownApp, "\(String(describing: noApp))")
        XCTAssertTrue(noApp?.message.contains("not-installed") == true, noApp?.message ?? "")
        var sessions = try await broker.sessions()
        XCTAssertEqual(sessions.map(\.id), [kept])
        XCTAssertEqual(sessions.first?.state, .foregroundActive)

        try await broker.close(kept)
        let again = await broker.refusal { try await broker.activate(kept) }
        XCTAssertEqual(again?.code, .sessionDiscarded, "\(String(describing: again))")
        let closedTwice = await broker.refusal { try await broker.close(kept) }
        XCTAssertEqual(closedTwice?.code, .sessionDiscarded, "\(String(describing: closedTwice))")
        sessions = try await broker.sessions()
        XCTAssertEqual(sessions.count, 0)
    }

    func testASessionOutlivesItsProcessInProcess() async throws {
        try await BrokerUnderTest.inProcess.run(Self.aSessionOutlivesItsProcess)
    }

    func testASessionOutlivesItsProcessLive() async throws {
        try await BrokerUnderTest.live.run(Self.aSessionOutlivesItsProcess)
    }

    func testTheForegroundHoldsTwoScenesInProcess() async throws {
        try await BrokerUnderTest.inProcess.run(Self.theForegroundHoldsTwoScenesAndTheNewestHasTheKey)
    }

    func testTheForegroundHoldsTwoScenesLive() async throws {
        try await BrokerUnderTest.live.run(Self.theForegroundHoldsTwoScenesAndTheNewestHasTheKey)
    }

    func testRefusedRequestsChangeNothingInProcess() async throws {
        try await BrokerUnderTest.inProcess.run(Self.refusedRequestsChangeNothing)
    }

    func testRefusedRequestsChangeNothingLive() async throws {
        try await BrokerUnderTest.live.run(Self.refusedRequestsChangeNothing)
    }
}
