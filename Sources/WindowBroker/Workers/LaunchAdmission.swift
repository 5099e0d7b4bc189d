import IPCWire

/// Whether a scene process may start now, and the count of those starting: an app in a crash
/// loop (`StartLimit`) and a broker that stops start none, and live processes plus the launches
/// under way stay under the limit. A launch takes its slot in the same step as the check, so a
/// launch that suspends (taking a prewarmed worker, spawning) cannot let another one past the
/// limit meanwhile. Pure logic, in the broker's isolation.
struct LaunchAdmission {
    private(set) var startLimit: StartLimit
    let maxLiveWorkers: Int
    /// Launches admitted and not finished: counted against the limit before their processes
    /// are live.
    private(set) var inFlight = 0

    init(startLimit: StartLimit, maxLiveWorkers: Int) {
        self.startLimit = startLimit
        self.maxLiveWorkers = maxLiveWorkers
    }

    /// Why `app` may not start a process now, with `live` processes running; nothing when it may.
    func check(_ app: AppID, live: Int, stopping: Bool, now: ContinuousClock.Instant) throws(BrokerError) {
        if let wait = startLimit.retryAfter(app, now: now) {
            let seconds = wait.seconds
            throw BrokerError(
                .crashLoop,
                "app '\(app)' failed to start or crashed \(startLimit.burst) times within \(startLimit.interval.formattedSeconds); new scenes are refused for another \(Int(seconds.rounded(.up))) s",
                retryAfterSeconds: seconds)
        }
        if stopping { throw Self.stopping }
        guard live + inFlight < maxLiveWorkers else {
            throw BrokerError(.resourceExhausted, "\(live) scene processes are running (limit \(maxLiveWorkers)); close or reclaim one first")
        }
    }

    /// What a launch is told while the broker stops.
    static let stopping = BrokerError(.requestDenied, "the broker is stopping; no scene is started now")

    /// `check`, then the slot: every admission that returns is matched by one `finished()`.
    mutating func admit(_ app: AppID, live: Int, stopping: Bool, now: ContinuousClock.Instant) throws(BrokerError) {
        try check(app, live: live, stopping: stopping, now: now)
        inFlight += 1
    }

    /// An admitted launch has its process (now live, or bound from a pool) or failed.
    mutating func finished() {
        precondition(inFlight > 0, "a launch finished that was never admitted")
        inFlight -= 1
    }

    /// Room for one more idle process beside `live` ones and `idle` already waiting: a prewarm
    /// pool never takes the room scenes need.
    func hasRoomForIdle(live: Int, idle: Int) -> Bool {
        live + inFlight + idle < maxLiveWorkers
    }

    /// How long until `app` may launch again; nil when it may now.
    func retryAfter(_ app: AppID, now: ContinuousClock.Instant) -> Duration? {
        startLimit.retryAfter(app, now: now)
    }

    /// A launch of `app` failed or one of its scenes crashed.
    mutating func recordFailure(_ app: AppID, now: ContinuousClock.Instant) {
        startLimit.recordFailure(app, now: now)
    }

    /// A scene of `app` connected: its crash streak is over.
    mutating func recordSuccess(_ app: AppID) {
        startLimit.recordSuccess(app)
    }
}
