import IPCWire

extension SessionStatus {
    /// The session as `sessions` lists it (`includeRestoration` false: no activities or
    /// storage, so a page of 500 fits a frame) or as `show` and a connecting scene get it.
    package func wire(includeRestoration: Bool) -> Windowbroker_V1_SessionInfo {
        .with {
            $0.id = session.id.description
            $0.appID = session.appID.rawValue
            $0.configuration = session.configuration
            $0.role = session.role
            $0.title = session.title
            $0.state = session.state.wire
            $0.pid = pid ?? 0
            $0.pssBytes = pss
            $0.createdAt = session.createdAt.timeIntervalSince1970
            $0.lastActiveAt = session.lastActiveAt.timeIntervalSince1970
            $0.lastDisconnect = session.lastDisconnect?.description ?? ""
            $0.launchCount = UInt32(session.launchCount)
            $0.restorationSaved = session.restoration != nil
            $0.presentation = session.presentation.wire
            $0.requestedBy = session.requestedBy?.description ?? ""
            $0.key = isKey
            $0.snapshotKept = hasSnapshot
            if let wait = crashLoopRetryAfter { $0.crashLoopRetryAfterSeconds = wait.seconds }
            guard includeRestoration else { return }
            if let restoration = session.restoration { $0.restorationActivity = restoration.wire }
            if let quarantined = session.quarantined { $0.quarantinedRestoration = quarantined.wire }
            if let current = session.currentActivity { $0.currentActivity = current.wire }
            if !session.storage.isEmpty { $0.storage = PlistValue.wire(dictionary: session.storage) }
        }
    }
}
