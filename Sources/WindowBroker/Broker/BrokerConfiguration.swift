import Foundation
import IPCWire

/// Everything the broker can be told at start. Defaults follow the XDG base directories.
public struct BrokerConfiguration: Sendable {
    public var appsDirectories: [String]
    /// Holds `state.sqlite`.
    public var stateDirectory: String
    /// Holds `control.sock` (created 0700).
    public var runtimeDirectory: String
    public var socketPath: String { runtimeDirectory + "/control.sock" }
    /// Where bare executable names in manifests are found first.
    public var helperDirectory: String?
    public var environment: [String: String]

    /// At most this many scenes are in the foreground at once (split view holds two).
    public var maxForegroundScenes = 2
    public var maxLiveWorkers = 64
    public var maxSessionsPerApp = 256
    /// Control connections that make requests; a full table closes the longest-idle one.
    public var maxControlConnections = 128
    /// A control client that has not read an answer within this is disconnected.
    public var replyWriteTimeout: Duration = .seconds(5)
    /// `watch` connections, counted apart (they are idle by design).
    public var maxWatchers = 1024
    /// A control connection with no request for this long is closed (watchers excepted).
    public var controlIdleTimeout: Duration = .seconds(60)
    public var maxFrameBytes = WireProtocol.defaultMaxFrameBytes
    /// The most a watching connection may send in one frame: it only listens (pings, a stop).
    public var watcherFrameBytes = 16 << 10
    /// The unfinished large frames (over 64 KiB) that all control connections together may
    /// make the broker hold; a frame beyond it is refused `resourceExhausted`.
    public var maxPartialFrameBytes = 32 << 20
    public var maxActivityBytes = WireProtocol.defaultMaxActivityBytes
    public var maxUpdatePayloadBytes = WireProtocol.defaultMaxUpdatePayloadBytes
    public var maxDefaultsBytes = WireProtocol.defaultMaxDefaultsBytes
    public var maxSceneStorageBytes = WireProtocol.defaultMaxSceneStorageBytes
    /// Updates queued for one scene before they are dropped for one `updatesDropped` notice.
    public var updateQueueLimit = 256
    /// Control requests one scene may have in flight; more are answered resourceExhausted.
    public var maxSceneRequestsInFlight = 32
    /// How long the broker waits for a scene to acknowledge one update before sending the next.
    public var updateAckTimeout: Duration = .seconds(5)
    /// This many failed launches or crashes of an app within `startLimitInterval` put it in a
    /// crash loop (systemd's StartLimitBurst / StartLimitIntervalSec).
    public var startLimitBurst = 5
    public var startLimitInterval: Duration = .seconds(10)
    /// Put back the scenes that were on screen at the last stop (`--restore-workspace`).
    public var restoreWorkspace = false
    /// Rebuild the search index from the stored activities at start (`--rebuild-index`).
    public var rebuildSearchIndex = false
    /// How many scenes save and stop at once during reclaim and shutdown.
    public var reclaimConcurrency = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// How long a reconnecting scene may take in restoreInteractionState (extension included).
    public var restorationTimeout: Duration = .seconds(5)
    /// How long a worker may take to answer any other command.
    public var workerTimeout: Duration = .seconds(5)
    /// How long a new worker may take to start and say Hello.
    public var launchTimeout: Duration = .seconds(10)
    /// How long a disconnected worker may take to exit before SIGKILL.
    public var exitTimeout: Duration = .seconds(3)
    /// How long a key scene's window may take to get the keyboard from the compositor before
    /// the key scene is where the keyboard stayed.
    public var keyGrantTimeout: Duration = .milliseconds(500)
    /// The whole of a graceful stop (the drain, every scene's save, the processes' end), from
    /// SIGTERM: well inside the unit's `TimeoutStopSec`, after which systemd kills what is left
    /// unsaved. Scenes that have not saved by then are reported and stopped.
    public var stopTimeout: Duration = .seconds(45)
    /// How long a control client may take to say Hello.
    public var handshakeTimeout: Duration = .seconds(10)
    /// Serve `org.windowbroker.Broker1` on the D-Bus session bus when there is one.
    public var sessionBus = true
    /// The system UI program (switcher, command overlay); nil: `windowbroker-ui` beside
    /// windowbrokerd (a build directory) or in PREFIX/libexec/windowbroker (an install).
    public var systemUI: String?
    var systemUIExecutable: String? {
        systemUI ?? installedHelper("windowbroker-ui", FileManager.default.isExecutableFile(atPath:))
    }
    /// The system UI's drawing library (`libwindowbroker-drawing.so`), handed to it in
    /// `WINDOWBROKER_DRAWING_LIBRARY`: the one the broker's own environment names, else the one
    /// found where the system UI is.
    var drawingLibrary: String? {
        if let named = environment["WINDOWBROKER_DRAWING_LIBRARY"], !named.isEmpty { return named }
        return installedHelper("libwindowbroker-drawing.so", FileManager.default.isReadableFile(atPath:))
    }
    /// `name` beside windowbrokerd (a build directory) or in PREFIX/libexec/windowbroker (an
    /// install), the first that is `usable`.
    private func installedHelper(_ name: String, _ usable: (String) -> Bool) -> String? {
        guard let helperDirectory else { return nil }
        let candidates = [helperDirectory + "/" + name, helperDirectory + "/../libexec/windowbroker/" + name]
        return candidates.first(where: usable).map { ($0 as NSString).standardizingPath }
    }
    /// What the broker's waits and time-based policies go by (`BrokerClock`).
    public var clock: any BrokerClock = SystemClock()

    public init(
        appsDirectories: [String]? = nil,
        stateDirectory: String? = nil,
        runtimeDirectory: String? = nil,
        helperDirectory: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        let home = environment["HOME"] ?? NSHomeDirectory()
        func xdg(_ name: String, _ fallback: String) -> String {
            environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback
        }
        self.environment = environment
        self.appsDirectories = appsDirectories ?? ManifestLoader.defaultDirectories(environment: environment)
        self.stateDirectory = stateDirectory ?? xdg("XDG_STATE_HOME", home + "/.local/state") + "/windowbroker"
        self.runtimeDirectory = runtimeDirectory ?? xdg("XDG_RUNTIME_DIR", "/run/user/\(getuid())") + "/windowbroker"
        self.helperDirectory = helperDirectory
    }
}
