/// SceneWorkerTesting: drive an app's scene through the SDK's real runtime, with no broker.
///
/// `SceneTestHost` plays the broker on the other end of a socket pair: it says Welcome, sends
/// the lifecycle commands in the contract's order (docs/LIFECYCLE.md), and acknowledges and
/// records what the scene reports (its title, current activity, storage). Everything between
/// is the SDK itself, so a delegate tested here sees exactly the calls, order and threads it
/// sees under `windowbrokerd`.
///
/// ```swift
/// let host = try await SceneTestHost.start(MyApp())
/// try await host.connect(activity: UserActivity(activityType: "notes.edit"))
/// try await host.enterForeground()
/// _ = try await host.perform("type", ["text": "hello"])
/// let saved = try await host.saveRestorationActivity()
/// try await host.disconnect()
/// ```
import CLinuxShim
import Foundation
import Glibc
import IPCWire
import NIOCore
import NIOPosix
import SceneWorker

@MainActor
public final class SceneTestHost {
    /// The session the scene is connected to.
    public let sessionID = SessionID()
    /// The app the session belongs to.
    public let appID: AppID
    /// The latest title the scene reported ("" before any).
    public private(set) var title = ""
    /// The latest current activity the scene reported.
    public private(set) var currentActivity: UserActivity?
    /// The scene's storage as its writes left it.
    public private(set) var storage: [String: PlistValue] = [:]
    /// How many reports of its title and activity the scene sent: what one callback changes
    /// goes out in one.
    public private(set) var sceneUpdatesReceived = 0
    /// Requests the scene made of the broker (activations, posts, ...), each refused: there is
    /// no broker. Their kinds, in order.
    public private(set) var refusedRequests: [String] = []

    private let connection: WireConnection
    private let scene: Task<Void, any Error>
    private var connected = false
    /// Frames from the scene handled so far, in the order read (the Hello, then what
    /// `received` took): an answer is looked at once those before it are, as the broker does.
    private var framesHandled = GrowingCount()

    private init(appID: AppID, connection: WireConnection, scene: Task<Void, any Error>) {
        self.appID = appID
        self.connection = connection
        self.scene = scene
    }

    /// Starts `app` as a scene process would (its app delegate launches when the scene says
    /// Hello) and returns once the handshake is done.
    public static func start(_ app: some AppDelegate, appID: AppID = "app") async throws -> SceneTestHost {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, wb_sock_stream() | wb_sock_cloexec(), 0, &pair) == 0 else {
            throw BrokerError(.resourceExhausted, "socketpair: \(String(cString: strerror(errno)))")
        }
        let runtime = SceneRuntime(app: app)
        let scene = Task { @MainActor in try await runtime.run(socket: pair[1], sessionID: "") }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(pair[0]) { channel in
            channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel) }
        }
        let (hello, helloSink) = AsyncStream.makeStream(of: Void.self)
        let (ready, readySink) = AsyncStream.makeStream(of: SceneTestHost.self)
        Task {
            try? await channel.executeThenClose { inbound, outbound in
                let connection = WireConnection(channel, outbound: outbound)
                let host = SceneTestHost(appID: appID, connection: connection, scene: scene)
                readySink.yield(host)
                readySink.finish()
                _ = await connection.readLoop(inbound) { envelope in
                    if case .hello = envelope.body {
                        await connection.reply(to: envelope, with: .welcome(.current(brokerPID: getpid())))
                        await host.frameHandled()
                        helloSink.finish()
                        return
                    }
                    await host.received(envelope)
                    await host.frameHandled()
                }
                host.readingEnded()
            }
        }
        var host: SceneTestHost?
        for await made in ready { host = made }
        for await _ in hello {}
        guard let host else { throw BrokerError(.connectionClosed, "the scene's connection failed before its Hello") }
        return host
    }

    // MARK: - The lifecycle, in the contract's order

    /// willConnect, with `activity` as the connection's activity and, when `restoring` is
    /// given, `restoreInteractionState` with it (a session coming back).
    public func connect(activity: UserActivity? = nil, restoring: UserActivity? = nil, title: String = "") async throws {
        let session = Windowbroker_V1_SessionInfo.with {
            $0.id = sessionID.description
            $0.appID = appID.rawValue
            $0.configuration = "Default"
            $0.title = title
        }
        _ = try await command(.connect(.with {
            $0.session = session
            $0.newSession = restoring == nil
            if let activity { $0.userActivities = [activity.wire] }
            if let restoring { $0.restorationActivity = restoring.wire }
            $0.availableConfigurations = ["Default"]
        }))
        connected = true
        if let restoring {
            _ = try await command(.restoreInteractionState(.with { $0.activity = restoring.wire }))
        }
    }

    /// willEnterForeground, then didBecomeActive: the scene is on screen and interactive.
    public func enterForeground() async throws {
        try await transition(.willEnterForeground)
        try await transition(.didBecomeActive)
    }

    /// willResignActive, then didEnterBackground.
    public func enterBackground() async throws {
        try await transition(.willResignActive)
        try await transition(.didEnterBackground)
    }

    /// What the scene hands over to be restored from (`stateRestorationActivity`).
    public func saveRestorationActivity() async throws -> UserActivity? {
        guard case .restorationActivity(let saved) = try await command(.restorationActivityRequest(.init())) else {
            throw BrokerError(.malformedFrame, "the scene answered the save with something else")
        }
        return saved.hasActivity ? try UserActivity(wire: saved.activity, maxBytes: .max) : nil
    }

    /// An app action, as `wmctl send` delivers it.
    public func perform(_ action: String, _ arguments: [String: PlistValue] = [:]) async throws -> ActionOutcome {
        guard case .actionResult(let result) = try await command(.performAction(.with {
            $0.action = action
            $0.arguments = PlistValue.wire(dictionary: arguments)
        })) else {
            throw BrokerError(.malformedFrame, "the scene answered the action with something else")
        }
        return try ActionOutcome(wire: result)
    }

    /// didDisconnect; returns once the scene's runtime has ended, as its process would.
    public func disconnect(discarded: Bool = false) async throws {
        _ = try await command(.disconnect(.with { $0.discarded = discarded }))
        try await scene.value
    }

    // MARK: - The broker's side

    private func transition(_ transition: Windowbroker_V1_Transition) async throws {
        _ = try await command(.transition(.with { $0.transition = transition }))
    }

    private func command(_ kind: Windowbroker_V1_WorkerCommand.OneOf_Kind) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind? {
        let answer = try await connection.answer(to: .workerCommand(.with { $0.kind = kind }), timeout: .seconds(10), what: "the scene")
        // The scene's reports written before its answer are recorded first (docs/PROTOCOL.md).
        if answer.framesBefore > framesHandled.value {
            await withCheckedContinuation { framesHandled.wait(for: answer.framesBefore, $0) }
        }
        let reply = answer.envelope
        switch reply.body {
        case .workerMessage(let message): return message.kind
        case .error(let error): throw BrokerError(wire: error)
        default: throw BrokerError(.malformedFrame, "the scene answered with something else")
        }
    }

    /// Nothing more will be read: an answer waiting for frames before it is looked at now.
    private func readingEnded() {
        framesHandled.giveUp(beyond: framesHandled.value)
    }

    private func frameHandled() {
        framesHandled.advance()
    }

    private func received(_ envelope: Envelope) async {
        switch envelope.body {
        case .workerMessage(let message):
            switch message.kind {
            case .sceneUpdate(let update)?:
                sceneUpdatesReceived += 1
                if !update.title.isEmpty { title = update.title }
                if update.hasUserActivity { currentActivity = try? UserActivity(wire: update.userActivity, maxBytes: .max) }
            case .storage(let update)?:
                for key in update.removed { storage[key] = nil }
                for entry in update.set.entries { storage[entry.key] = try? PlistValue(wire: entry.value, path: entry.key) }
            default:
                break
            }
            await connection.reply(to: envelope, with: .workerMessage(.with { $0.ack = .init() }))
        case .controlRequest(let request):
            refusedRequests.append(request.kind.map { "\($0)".components(separatedBy: "(").first ?? "" } ?? "")
            await connection.reply(to: envelope, error: BrokerError(.invalidState, "no broker: a SceneTestHost answers no requests"))
        default:
            if envelope.id != 0 { await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "not a scene's message")) }
        }
    }
}
