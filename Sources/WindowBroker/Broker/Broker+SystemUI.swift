import Foundation
import IPCWire

extension Broker {
    /// Shows the switcher (every session, or one app's: Show All Windows) or the command
    /// overlay of a scene (nil: the key scene), answered once its first frame is on screen.
    func showSystemUI(_ surface: SystemUIRequestSurface) async throws -> SystemUIHost.Shown {
        let resolved: SystemUIHost.Surface
        switch surface {
        case .switcher(let app):
            if let app { try checkKnownApp(app) }
            resolved = .switcher(app: app)
            await refreshSnapshots(of: allSessions.filter { $0.state.isForeground && (app == nil || $0.appID == app) }.map(\.id))
        case .commandOverlay(let session):
            guard let target = try commandTarget(session) else {
                throw BrokerError(.invalidState, "no scene is the key scene: the command overlay shows the commands of a scene (name one with --session)")
            }
            resolved = .commandOverlay(session: target)
        }
        let shown = try await systemUI.show(resolved)
        logger.info("system UI shown", metadata: [
            "surface": "\(resolved.name)", "pid": "\(shown.pid)", "items": "\(shown.report.items.count)",
            "firstFrame": "\(shown.firstFrame.formattedSeconds)",
        ])
        return shown
    }

    /// Fresh pictures of the scenes on screen, all at once, each in its session's turn. A
    /// scene busy past a glance (`pictureRefreshWait`) keeps its last picture on its card: the
    /// switcher does not wait for it (its fresh picture is kept when it comes, for next time).
    private func refreshSnapshots(of ids: [SessionID]) async {
        let tasks = ids.map { id in
            laterOnSession(id, orElse: ()) { await self.refreshSnapshotInTurn(id) }
        }
        let byID = Dictionary(uniqueKeysWithValues: zip(ids, tasks))
        _ = await allAtOnce(ids, within: Self.pictureRefreshWait, on: SystemClock()) { id in await byID[id]?.value }
    }

    /// How long the switcher waits for the scenes on screen to draw a fresh picture.
    static let pictureRefreshWait: Duration = .milliseconds(300)

    private func refreshSnapshotInTurn(_ id: SessionID) async {
        await drivers[id]?.refreshSnapshot(in: self)
    }

    /// Ends the switcher or overlay shown; false when none was. With a session: only that
    /// scene's command overlay.
    func hideSystemUI(onlyOverlayOf session: SessionID? = nil) async -> Bool {
        if let session {
            guard await systemUI.shown == .commandOverlay(session: session) else { return false }
        }
        return await systemUI.hide()
    }
}

/// What a request for the system UI names, before the broker checks it.
enum SystemUIRequestSurface: Sendable {
    case switcher(app: AppID?)
    case commandOverlay(session: SessionID?)
}
