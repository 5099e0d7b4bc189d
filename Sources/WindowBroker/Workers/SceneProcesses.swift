import IPCWire

/// The scene processes as the broker keeps them: the session each live one shows, which may
/// start now (`LaunchAdmission`, counting the live ones), and the idle ones waiting in their
/// app's pool (`PrewarmPools`). One value in the broker's isolation; how a process starts
/// (`WorkerLauncher`) and what it prints (`WorkerOutput`) are services beside it.
struct SceneProcesses {
    /// The session each live scene process shows, found by the process (its frames and its end).
    var shown: [ObjectIdentifier: SessionID] = [:]
    /// Which launches may start (crash loops, the limit on live processes) and those under way.
    var admission: LaunchAdmission
    let pools = PrewarmPools()

    init(admission: LaunchAdmission) {
        self.admission = admission
    }

    /// Scene processes running and bound to a session.
    var live: Int { shown.count }

    /// Takes a launch slot for a process of `app`, or says why none may start now.
    mutating func admit(_ app: AppID, stopping: Bool, now: ContinuousClock.Instant) throws(BrokerError) {
        try admission.admit(app, live: live, stopping: stopping, now: now)
    }
}
