import Foundation
import IPCWire
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

final class FocusPolicyTests: XCTestCase {
    private let t0 = Date(timeIntervalSince1970: 1000)

    func testTheActiveSceneResignsWhenAnotherBecomesActive() {
        let a = UUID(), b = UUID()
        let changes = FocusPolicy.makeRoom(for: b, among: [
            .init(id: a, state: .foregroundActive, lastActiveAt: t0),
            .init(id: b, state: .background, lastActiveAt: t0.addingTimeInterval(-10)),
        ], maxForeground: 2)
        XCTAssertEqual(changes.map(\.id), [a])
        XCTAssertEqual(changes.map(\.target), [.foregroundInactive])
    }

    func testTheLeastRecentlyActiveForegroundSceneGoesToTheBackground() {
        let old = UUID(), recent = UUID(), new = UUID()
        let changes = FocusPolicy.makeRoom(for: new, among: [
            .init(id: old, state: .foregroundInactive, lastActiveAt: t0),
            .init(id: recent, state: .foregroundActive, lastActiveAt: t0.addingTimeInterval(5)),
            .init(id: new, state: .unattached, lastActiveAt: t0.addingTimeInterval(-100)),
        ], maxForeground: 2)
        XCTAssertEqual(changes.map(\.id), [recent, old])
        XCTAssertEqual(changes.map(\.target), [.foregroundInactive, .background])
    }

    func testWithOneForegroundSlotEveryOtherSceneLeaves() {
        let a = UUID(), b = UUID(), c = UUID()
        let changes = FocusPolicy.makeRoom(for: c, among: [
            .init(id: a, state: .foregroundActive, lastActiveAt: t0),
            .init(id: b, state: .foregroundInactive, lastActiveAt: t0),
            .init(id: c, state: .background, lastActiveAt: t0),
        ], maxForeground: 1)
        XCTAssertEqual(Set(changes.map(\.id)), [a, b])
        XCTAssertTrue(changes.allSatisfy { $0.target == .background })
    }
}

final class ActivationRouterTests: XCTestCase {
    private func app(multiple: Bool = true, configurations: [AppManifest.Configuration]? = nil) -> AppManifest {
        AppManifest(
            id: "notes", name: "Notes", executable: "/bin/true", arguments: [], supportsMultipleScenes: multiple,
            configurations: configurations ?? [.init(name: "Editor", role: AppManifest.defaultRole, delegate: "D", canActivate: nil, prefersToActivate: nil)],
            activityTypes: ["notes.edit"], source: "test")
    }

    private func session(prefers: [String] = [], lastActive: TimeInterval = 0) -> SceneSession {
        var session = SceneSession(appID: "notes", configuration: "Editor", role: AppManifest.defaultRole, title: "t")
        session.activationConditions = ActivationConditions(canActivate: ["*"], prefersToActivate: prefers)
        session.lastActiveAt = Date(timeIntervalSince1970: lastActive)
        return session
    }

    private func request(target: String? = nil, type: String = "notes.edit", session: UUID? = nil, new: Bool = false) -> ActivationRequest {
        ActivationRequest(appID: "notes", sessionID: session,
                          activity: UserActivity(activityType: type, targetContentIdentifier: target), forceNew: new)
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
    }

    func testAnExplicitSessionMustBelongToTheApp() {
        XCTAssertThrowsError(try ActivationRouter.route(request(session: UUID()), app: app(), sessions: [session()])) {
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
        FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(json.utf8))
    }

    func testBadManifestsAreReportedWithFileFieldAndReasonAndSkipped() {
        write("good.json", #"{"id": "good", "executable": "/bin/true", "activityTypes": ["a.b"]}"#)
        write("no-exe.json", #"{"id": "noexe", "executable": "/nonexistent/app"}"#)
        write("bad-type.json", #"{"id": "typed", "executable": "/bin/true", "supportsMultipleScenes": "yes"}"#)
        write("missing-id.json", #"{"executable": "/bin/true"}"#)
        write("broken.json", "{ not json")
        write("z-dup.json", #"{"id": "good", "executable": "/bin/true"}"#)
        write("ignored.txt", "not a manifest")
        let (apps, problems) = ManifestLoader(directories: [directory], helperDirectory: nil, searchPath: []).load()
        XCTAssertEqual(Array(apps.keys), ["good"])
        let byFile = Dictionary(uniqueKeysWithValues: problems.map { (($0.file as NSString).lastPathComponent, $0) })
        XCTAssertEqual(byFile["no-exe.json"]?.field, "executable")
        XCTAssertEqual(byFile["bad-type.json"]?.field, "supportsMultipleScenes")
        XCTAssertEqual(byFile["missing-id.json"]?.field, "id")
        XCTAssertEqual(byFile["broken.json"]?.reason, "is not valid JSON")
        XCTAssertEqual(byFile["z-dup.json"]?.field, "id")
        XCTAssertNil(byFile["ignored.txt"])
    }

    func testBareExecutableNamesAreFoundBesideTheBrokerThenOnPath() throws {
        write("app.json", #"{"id": "app", "executable": "true"}"#)
        let loaded = ManifestLoader(directories: [directory], helperDirectory: "/nonexistent", searchPath: ["/usr/bin", "/bin"]).load()
        XCTAssertTrue(loaded.problems.isEmpty, "\(loaded.problems)")
        XCTAssertTrue(loaded.apps["app"]?.executable.hasSuffix("/true") == true)
    }
}
