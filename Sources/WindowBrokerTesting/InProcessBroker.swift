import Foundation
import IPCWire
import Logging
import Synchronization
import WindowBroker

/// A broker running in the test process: a private directory for its store, manifests and
/// control socket, fake workers (`FakeWorkers`) instead of processes, and its control server
/// listening so `BrokerClient` talks to it over a real socket.
public final class InProcessBroker: Sendable {
    /// An app to install: its manifest's id and activity types. The executable is never run.
    public struct App: Sendable {
        public var id: String
        public var activityTypes: [String]
        public var supportsMultipleScenes: Bool
        public var prewarm: Int

        public init(_ id: String, activityTypes: [String] = [], supportsMultipleScenes: Bool = true, prewarm: Int = 0) {
            self.id = id
            self.activityTypes = activityTypes
            self.supportsMultipleScenes = supportsMultipleScenes
            self.prewarm = prewarm
        }
    }

    public let broker: Broker
    public let workers: FakeWorkers
    public let directory: String
    public var socketPath: String { directory + "/run/control.sock" }
    private let server: Task<Void, any Error>

    private init(broker: Broker, workers: FakeWorkers, directory: String, server: Task<Void, any Error>) {
        self.broker = broker
        self.workers = workers
        self.directory = directory
        self.server = server
    }

    /// Starts a broker with `apps` installed; `configure` adjusts timeouts and limits. `workers`
    /// launches its scenes: a test that needs them set up before the broker's first launch
    /// (a prewarm pool starts at once) passes its own.
    public static func start(
        apps: [App], workers: FakeWorkers = FakeWorkers(), configure: (inout BrokerConfiguration) -> Void = { _ in }
    ) async throws -> InProcessBroker {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("windowbroker-inprocess-\(UUID().uuidString.prefix(8))").path
        let appsDirectory = directory + "/apps"
        try FileManager.default.createDirectory(atPath: appsDirectory, withIntermediateDirectories: true)
        for app in apps {
            let manifest: [String: Any] = [
                "id": app.id, "executable": "/bin/true", "activityTypes": app.activityTypes,
                "supportsMultipleScenes": app.supportsMultipleScenes, "prewarm": app.prewarm,
            ]
            try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: "\(appsDirectory)/\(app.id).json"))
        }
        var configuration = BrokerConfiguration(
            appsDirectories: [appsDirectory], stateDirectory: directory + "/state", runtimeDirectory: directory + "/run",
            environment: [:])
        configure(&configuration)
        var logger = Logger(label: "windowbroker.inprocess")
        logger.logLevel = ProcessInfo.processInfo.environment["WINDOWBROKER_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        let broker = try await Broker(configuration: configuration, logger: logger, launcher: workers)
        let (listening, ready) = AsyncStream.makeStream(of: Void.self)
        let server = Task {
            try await ControlServer(broker: broker, listener: .path(configuration.socketPath), logger: logger).run {
                ready.yield()
                ready.finish()
            }
        }
        for await _ in listening { break }
        return InProcessBroker(broker: broker, workers: workers, directory: directory, server: server)
    }

    /// Runs `body` with a control client connected to this broker.
    package func withClient<Result: Sendable>(_ body: @Sendable (BrokerClient) async throws -> Result) async throws -> Result {
        try await BrokerClient.withConnection(socketPath: socketPath, clientName: "inprocess-test", timeout: .seconds(10), body)
    }

    /// Stops the control server and every fake scene (the broker's own shutdown path), and
    /// removes the directory. A broker wedged by the test that failed is left behind after
    /// 10 s rather than hanging the run.
    public func stop() async {
        server.cancel()
        let broker = self.broker
        _ = try? await Self.withDeadline(.seconds(10)) { await broker.shutdown() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `body`'s result, or `timedOut` once `limit` has passed: a deadlock under test fails
    /// the test instead of hanging it (the stuck work is abandoned, not awaited).
    public static func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let settled = Settled()
        return try await withCheckedThrowingContinuation { (result: CheckedContinuation<T, any Error>) in
            Task {
                do {
                    let value = try await body()
                    if settled.claim() { result.resume(returning: value) }
                } catch {
                    if settled.claim() { result.resume(throwing: error) }
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                if settled.claim() { result.resume(throwing: BrokerError(.timedOut, "did not finish within \(limit): stuck")) }
            }
        }
    }

    private final class Settled: Sendable {
        private let done = Atomic<Bool>(false)
        func claim() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
    }
}
