/// The broker's domain values put on the wire, in one place at the control edge: the broker
/// answers with `SessionStatus`, `PressureReport`, `Snapshot`, search hits; wmctl, D-Bus and the scenes
/// read `Windowbroker_V1_*` messages.
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
            $0.restorationSaved = session.hasRestoration
            $0.presentation = session.presentation.wire
            $0.requestedBy = session.requestedBy?.description ?? ""
            $0.key = isKey
            $0.snapshotKept = hasSnapshot
            if let wait = crashLoopRetryAfter { $0.crashLoopRetryAfterSeconds = wait.seconds }
            guard includeRestoration else { return }
            if let restoration = session.saved?.restoration { $0.restorationActivity = restoration.wire }
            if let quarantined = session.saved?.quarantined { $0.quarantinedRestoration = quarantined.wire }
            if let current = session.saved?.currentActivity { $0.currentActivity = current.wire }
            if !session.storage.isEmpty { $0.storage = PlistValue.wire(dictionary: session.storage) }
        }
    }
}

extension WorkerOutput.Line {
    package var wire: Windowbroker_V1_LogLine {
        .with {
            $0.time = time.timeIntervalSince1970
            $0.pid = pid
            $0.text = text
            $0.stream = stream.rawValue
        }
    }
}

extension PressureReport {
    package var wire: Windowbroker_V1_PressureReply {
        .with {
            $0.level = level.wire
            $0.someAvg10 = inputs.psi?.some.avg10 ?? 0
            $0.fullAvg10 = inputs.psi?.full?.avg10 ?? 0
            $0.memAvailable = inputs.memInfo?.available ?? 0
            $0.workersPss = workersPSS
            $0.budget = budget ?? 0
            $0.reclaimedCount = UInt32(reclaimedCount)
            $0.reclaimedBytes = reclaimedBytes
            $0.psiSource = psiSource
            $0.reasons = reasons
            $0.samples = samples
        }
    }
}

extension Snapshot {
    package var wire: Windowbroker_V1_SnapshotReply {
        .with {
            $0.sessionID = session.description
            $0.png = png
            $0.savedAt = savedAt.timeIntervalSince1970
            $0.width = UInt32(width)
            $0.height = UInt32(height)
            $0.thumbnail = isThumbnail
        }
    }
}

extension SearchIndex.Hit {
    package var wire: Windowbroker_V1_SearchHit {
        .with {
            $0.sessionID = sessionID.description
            $0.appID = appID.rawValue
            $0.title = title
            $0.snippet = snippet
            $0.activityType = activityType
            $0.targetContentIdentifier = targetContentIdentifier
            $0.score = score
        }
    }
}
