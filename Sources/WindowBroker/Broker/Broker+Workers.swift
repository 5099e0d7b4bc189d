import Foundation
import IPCWire

/// What workers tell the broker on their own, through their supervisors: scene updates,
/// restoration extensions, a closed connection, their exit.
extension Broker {
    /// Follows one worker's events until its supervisor has seen both the connection close and
    /// the process reaped.
    func supervise(_ worker: WorkerHandle) {
        Task { [weak self] in
            for await event in worker.events {
                // Each event handled in a task of its own, awaited: a task keeps the largest
                // stack its awaits ever needed until it ends, and this loop lives as long as the
                // worker (23 KiB per live worker when the handling ran in the loop's own task).
                await Task { await self?.workerEvent(event, from: worker) }.value
                if case .message = event { await worker.processed() }
            }
        }
    }

    private func workerEvent(_ event: WorkerEvent, from worker: WorkerHandle) async {
        let id = sessionShown(by: worker)?.id
        switch event {
        case .message(let envelope):
            guard let id else {
                await answerUnbound(envelope, from: worker)
                return
            }
            await drivers[id]?.received(envelope, on: worker.connection, in: self)
        case .connectionClosed:
            // End of file is a failure whatever the process does next; the exit path (or the
            // reap below, for a process that runs on) records why.
            guard let id else {
                worker.kill()
                return
            }
            await reap(id)
        case .exited:
            await workerEnded(worker, reason: await reason(for: worker, fallback: .brokerStopped))
        }
    }

    /// A prewarmed process not bound to a session yet may send what belongs to its app, not
    /// to a scene: the menu additions it built at launch (`AppDelegate.buildMenu`). Anything
    /// else comes after willConnect.
    private func answerUnbound(_ envelope: Envelope, from worker: WorkerHandle) async {
        guard envelope.id != 0 else { return }
        guard case .controlRequest(let request) = envelope.body, case .menuChange(let change)? = request.kind else {
            await worker.connection.reply(to: envelope, error: BrokerError(
                .sessionNotConnected, "this process is not bound to a session yet (prewarmed); requests come after willConnect"))
            return
        }
        do {
            let menu = try changeMenu(app: worker.appID, operations: change.operations)
            await worker.connection.reply(to: envelope, with: .controlReply(.with {
                $0.menu = ControlRequestHandler.menuChanged(app: worker.appID, menu, omitMenu: change.omitMenu)
            }))
        } catch {
            await worker.connection.reply(to: envelope, error: error)
        }
    }

    /// A key with a command modifier from the scene's window: dispatched as `wmctl key` would,
    /// to this scene (the one whose window has the keyboard).
    func keyInput(_ input: Windowbroker_V1_KeyInput, from id: SessionID) async -> Envelope.OneOf_Body {
        do {
            let shortcut = try KeyShortcut(parsing: input.shortcut)
            let outcome = try await key(shortcut, session: id)
            return .workerMessage(.with {
                $0.commandResult = .with {
                    $0.handledBy = outcome.handledBy?.rawValue ?? ""
                    $0.performed = outcome.result == .performed
                    $0.declineReason = outcome.detail
                    if let value = outcome.value { $0.value = value.wire }
                }
            })
        } catch {
            return .error(((error as? BrokerError) ?? BrokerError(.internalError, "\(error)")).wire)
        }
    }

    /// The user closed the scene's window: the scene disconnects as on iPadOS (its state saved
    /// first, its process ends) and its session stays in the switcher. Closing a window is not
    /// discarding it: that is the switcher's (`wmctl close`).
    func windowClosed(_ id: SessionID) async {
        guard hasConnectedScene(id) else { return }
        await leaveAndDisconnect(id, reason: .closedByUser, whose: "whose window was closed")
    }

    /// A scene the user or the compositor took off the screen: it leaves focus (the others
    /// move up in their turns), is saved and disconnects; its session stays.
    private func leaveAndDisconnect(_ id: SessionID, reason: DisconnectReason, whose: String) async {
        let returning = leaveFocus(id)
        do {
            try await onSession(id) { try await saveAndDisconnect(id, reason: reason) }
        } catch {
            logger.warning("a scene \(whose) did not disconnect cleanly", metadata: ["SESSION_ID": "\(id)", "error": "\(error)"])
        }
        for task in returning { _ = await task.value }
    }

    /// A scene's compositor went away: it cannot run on (GTK ends with its display), so it is
    /// saved and disconnected now, and, when it was on screen, put back when a compositor
    /// accepts connections again (`putBackAfterCompositorLoss`).
    func compositorLost(_ id: SessionID) async {
        guard hasConnectedScene(id) else { return }
        if compositor.lost(id, visible: focus.visible, key: focus.key) {
            logger.warning("the compositor went away; its scenes are saved and put back when it is there again", metadata: [
                "display": "\(compositor.display.description)",
            ])
        }
        await leaveAndDisconnect(id, reason: .compositorLost, whose: "whose compositor went away")
        awaitCompositor()
    }

    /// The display as the broker uses it: name, socket, whether a compositor answers, and how
    /// many scenes wait to be put back on it.
    public func display() -> (name: String?, path: String?, answers: Bool, waiting: Int) {
        (compositor.display.name, compositor.display.path, compositor.display.acceptsConnections, compositor.lostOrder.count)
    }

    /// `wmctl display NAME`: scenes launched from now on (and the system UI) use this display,
    /// and those a compositor took away come back on it once a compositor answers there. A
    /// compositor that came back under another name, or a session that moved, is found again
    /// this way. Scenes still on the old display stay there until they next launch.
    public func useDisplay(_ name: String) async throws(BrokerError) -> (name: String?, path: String?, answers: Bool, waiting: Int) {
        guard !name.isEmpty, !name.contains("\0"), name.utf8.count < 100 else {
            throw BrokerError(.invalidRequest, "a display is a socket name in $XDG_RUNTIME_DIR (wayland-1) or an absolute path to one")
        }
        var environment = configuration.environment
        environment["WAYLAND_DISPLAY"] = name
        compositor.use(WaylandSocket(environment: environment))
        await launcher.useDisplay(name)
        await systemUI.useDisplay(name)
        // The idle prewarmed workers are on the old display: others start on the new one.
        await processes.pools.drain(reason: .compositorLost, in: self)
        processes.pools.refill(in: self)
        let shown = display()
        logger.notice("the scenes' display changed", metadata: ["display": "\(compositor.display.description)", "answers": "\(shown.answers)"])
        awaitCompositor()
        return shown
    }

    /// Watches for a compositor while scenes wait to be put back (checked twice a second: a
    /// connect to the display's socket, which nothing answers while no compositor runs).
    func awaitCompositor() {
        guard compositor.waitsToPutBack, !compositor.watchingForReturn else { return }
        compositor.watchingForReturn = true
        Task {
            while self.compositor.waitsToPutBack, self.phase.isRunning {
                if self.compositor.display.acceptsConnections { await self.putBackAfterCompositorLoss() }
                guard self.compositor.waitsToPutBack else { break }
                try? await Task.sleep(for: .milliseconds(500))
            }
            self.compositor.watchingForReturn = false
        }
    }

    /// A compositor is there again (`awaitCompositor` saw it answer): the scenes that were on
    /// screen when it went away come back, the key one last (as the workspace after a restart).
    /// One still disconnecting waits for the next look.
    private func putBackAfterCompositorLoss() async {
        let ready = compositor.lostOrder.filter { !hasConnectedScene($0) }
        for id in ready { compositor.putBack(id) }
        let restored = await putBack(ready, what: "a scene the compositor took away")
        processes.pools.refill(in: self)  // none were started while it was away
        if restored > 0 {
            logger.notice("the compositor is back; scenes put back on screen", metadata: ["scenes": "\(restored)"])
        }
    }
}
