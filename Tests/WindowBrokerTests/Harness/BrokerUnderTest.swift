import Foundation
import IPCWire
import WindowBrokerTesting
import XCTest

/// Where a shared test body runs, as hummingbird's `.router` and `.live`: the broker in this
/// process with fake scenes that answer every lifecycle call as a well-behaved scene does, or
/// the real `windowbrokerd` with real scene processes (the probe). A body is written once
/// against the control client; run both ways, a difference is a bug in one of them. The
/// in-process run is the fast one to debug; the live run proves processes, signals and sockets.
enum BrokerUnderTest: String, CaseIterable, Sendable {
    case inProcess, live

    /// The app every shared body opens: the probe's `notes` (live), or a fake with its
    /// activity type (in process).
    static let app = "notes"

    /// Runs `body` with a control client connected to a fresh broker of this kind, which is
    /// stopped (and its directory removed) afterwards, whatever the body did.
    func run(_ body: @Sendable (SharedClient) async throws -> Void) async throws {
        switch self {
        case .inProcess:
            let running = try await InProcessBroker.start(apps: [.init(Self.app, activityTypes: ["notes.edit"])])
            do {
                try await running.withClient { try await body(SharedClient(client: $0)) }
            } catch {
                await running.stop()
                throw error
            }
            await running.stop()
        case .live:
            let harness = try BrokerHarness()
            defer { harness.tearDown() }
            try harness.start()
            try await BrokerClient.withConnection(socketPath: harness.socketPath, clientName: "shared-test", timeout: .seconds(30)) {
                try await body(SharedClient(client: $0))
            }
        }
    }
}

/// The requests shared bodies make, each answered with its reply or thrown as the broker's
/// `BrokerError`.
struct SharedClient: Sendable {
    let client: BrokerClient

    func open(app: String = BrokerUnderTest.app, session: String = "", forceNew: Bool = true) async throws -> Windowbroker_V1_SessionStateReply {
        try state(await client.request(.open(.with {
            $0.appID = app
            $0.sessionID = session
            $0.forceNew = forceNew
        })))
    }

    func activate(_ session: String) async throws -> Windowbroker_V1_SessionStateReply {
        try state(await client.request(.activate(.with { $0.sessionID = session })))
    }

    func background(_ session: String) async throws -> Windowbroker_V1_SessionStateReply {
        try state(await client.request(.background(.with { $0.sessionID = session })))
    }

    func reclaim(_ session: String) async throws -> Windowbroker_V1_SessionStateReply {
        try state(await client.request(.reclaim(.with { $0.sessionID = session })))
    }

    func close(_ session: String) async throws {
        _ = try await client.request(.close(.with { $0.sessionID = session }))
    }

    func sessions() async throws -> [Windowbroker_V1_SessionInfo] {
        try await client.allSessions()
    }

    func session(_ id: String) async throws -> Windowbroker_V1_SessionInfo {
        let found = try await sessions().first { $0.id == id }
        return try XCTUnwrap(found, "no session \(id)")
    }

    /// The error a request is refused with; a request that succeeds fails the test.
    func refusal(_ request: () async throws -> some Any, file: StaticString = #filePath, line: UInt = #line) async -> BrokerError? {
        do {
            _ = try await request()
            XCTFail("the request succeeded", file: file, line: line)
            return nil
        } catch {
            return error as? BrokerError
        }
    }

    private func state(_ reply: ControlReply) throws -> Windowbroker_V1_SessionStateReply {
        guard case .sessionState(let state) = reply else { throw BrokerError.unexpectedReply }
        return state
    }
}
