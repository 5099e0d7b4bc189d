import Foundation
import IPCWire

/// Focus as the broker carries it out: the coordinator decides, and each affected scene hears
/// about it in its own turn. Visible scenes are all foregroundActive; the key scene (keyboard
/// focus, key commands) is told with didBecomeKey / didResignKey, after it became active and
/// before it resigns active.
extension Broker {
    /// Every change of focus goes through here: when the key scene moved, the scenes that
    /// gained and lost it are told in their own turns (queued now, when it is decided).
    func changeFocus<T>(source: KeySource = .broker, _ change: (inout FocusCoordinator) -> T) -> T {
        let before = focus.key
        let result = change(&focus)
        if focus.key != before {
            for id in [before, focus.key].compactMap({ $0 }) { syncKeyLater(id, source: source) }
        }
        recordWorkspace()
        return result
    }

    /// Keeps the stored workspace (the scenes on screen, the key one) up to date while the
    /// broker runs, one write at a time, the newest state last. A stop takes every scene off
    /// the screen on purpose: that is not recorded, so the next start puts them back.
    func recordWorkspace() {
        guard phase.isRunning else { return }
        let now = SessionStore.Workspace(visible: focus.visible, key: focus.key)
        guard now != workspace.recorded else { return }
        workspace.recorded = now
        workspace.pending = now
        guard !workspace.writing else { return }
        workspace.writing = true
        Task {
            while let next = self.workspace.pending {
                self.workspace.pending = nil
                do { try await self.store.saveWorkspace(next) } catch {
                    self.logger.warning("the workspace (the scenes on screen) could not be saved", metadata: ["error": "\(error)"])
                }
            }
            self.workspace.writing = false
        }
    }

    /// Puts back the scenes that were on screen when the broker last ran, the key one last so
    /// that it ends up with the keyboard (as iPadOS restores all windows). Each comes back
    /// restored from its saved state; one that cannot is logged and skipped.
    public func restoreWorkspace() async {
        let saved: SessionStore.Workspace
        do { saved = try await store.loadWorkspace() } catch {
            logger.warning("the workspace could not be read; no scene is put back", metadata: ["error": "\(error)"])
            return
        }
        let order = saved.visible.filter { $0 != saved.key } + (saved.key.map { [$0] } ?? [])
        let restored = await putBack(order, what: "a scene of the workspace")
        if restored > 0 { logger.info("workspace restored", metadata: ["scenes": "\(restored)"]) }
    }

    /// Activates each session in `order` that is there and has no process, one after the
    /// other; one that cannot come back is logged as `what` and skipped. How many came back.
    func putBack(_ order: [SessionID], what: String) async -> Int {
        var restored = 0
        for id in order where drivers[id] != nil && !hasConnectedScene(id) {
            do {
                _ = try await activate(id)
                restored += 1
            } catch {
                logger.warning("\(what) could not be put back", metadata: ["SESSION_ID": "\(id)", "error": "\(error)"])
            }
        }
        return restored
    }

    /// Who moved the key scene, as `watch` shows it.
    enum KeySource: String {
        case broker, compositor
        /// The broker made a scene key and the compositor kept the keyboard where it was.
        case keyRefused
    }

    /// `syncKey` in the scene's turn. A scene without a connected process that was not told it
    /// is key has nothing to be told: one on its way forward hears it at the end of its drive
    /// (`syncKey` reads focus then), and a turn that does nothing, queued ahead of that drive,
    /// would make it wait (a new session's open waited 0.1 ms for it before its record went to
    /// the store).
    func syncKeyLater(_ id: SessionID, source: KeySource) {
        guard hasConnectedScene(id) || drivers[id]?.toldKey == true else { return }
        laterOnSession(id, orElse: ()) { await self.syncKey(id, source: source) }
    }

    /// Tells the scene whether it is the key scene, when that differs from what it was told
    /// last. Only a connected scene in the foreground can be key: one that is still on its way
    /// forward is told at the end of its drive, one whose process ended just loses it. An
    /// activation token (from the request that brought it forward) is always handed over: the
    /// broker may think a scene key whose window the compositor has not focused.
    /// When the compositor keeps the keyboard elsewhere, why is left in `compositor.refusedKey`
    /// for the activation's answer (this turn, or the one focus queued ahead of it, may hear it).
    func syncKey(_ id: SessionID, source: KeySource = .broker, activationToken: String? = nil) async {
        let connected = hasConnectedScene(id)
        let wanted = focus.key == id && connected && drivers[id]?.session.state.isForeground == true
        guard wanted != (drivers[id]?.toldKey == true) || (wanted && activationToken != nil) else { return }
        let changed = wanted != (drivers[id]?.toldKey == true)
        drivers[id]?.toldKey = wanted
        if changed, let appID = drivers[id]?.session.appID { emit(id, app: appID, .keyChanged(isKey: wanted, source: source.rawValue)) }
        guard connected else { return }
        // A scene with a window asks its compositor, and says what it asked.
        let answer: Windowbroker_V1_WorkerMessage.OneOf_Kind?
        do {
            answer = try await command(id, .keyStatus(.with {
                $0.isKey = wanted
                $0.activationToken = activationToken ?? ""
            }), timeout: configuration.workerTimeout,
                                  doing: wanted ? "didBecomeKey" : "didResignKey")
        } catch {
            logger.warning("scene was not told it is \(wanted ? "" : "no longer ")the key scene", metadata: [
                "SESSION_ID": "\(id)", "error": "\(error)",
            ])
            return
        }
        guard wanted, !(await compositorGivesKeyboard(to: id, answer)), focus.key == id else { return }
        // Refused: this scene hears it now, in its own turn; the one with the keyboard is key.
        let holder = compositor.keyboardHolder
        drivers[id]?.toldKey = false
        if let appID = drivers[id]?.session.appID { emit(id, app: appID, .keyChanged(isKey: false, source: KeySource.keyRefused.rawValue)) }
        changeFocus(source: .keyRefused) { $0.keyRefused(id, keptBy: holder) }
        let windowless = if case .keyStatus? = answer { false } else { true }
        if windowless {
            _ = try? await command(id, .keyStatus(.with { $0.isKey = false }), timeout: configuration.workerTimeout, doing: "didResignKey")
        }
        let kept = holder.map { "the window of session \($0)" } ?? "a window that is not a scene's"
        let why = windowless ? "it has no window" : "the compositor did not give its window the keyboard"
        logger.info("the key scene stays where the keyboard is", metadata: ["SESSION_ID": "\(id)", "keyboard": "\(holder?.description ?? "elsewhere")"])
        compositor.refusedKey[id] = "not the key scene: \(why), which stays with \(kept)"
    }

    /// Whether the compositor has the keyboard where the broker wants it, `id`'s window: it
    /// says so within `keyGrantTimeout` of the scene's asking. A compositor that never said
    /// where the keyboard is (headless, mutter) leaves the broker's decision standing; a scene
    /// with no window never takes the key from a scene's window that has the keyboard.
    private func compositorGivesKeyboard(to id: SessionID, _ answer: Windowbroker_V1_WorkerMessage.OneOf_Kind?) async -> Bool {
        guard compositor.reportsFocus else { return true }
        guard case .keyStatus(let status)? = answer else {
            guard let holder = compositor.keyboardHolder, holder != id, focus.wantsActive(holder) else { return true }
            return false
        }
        if status.keyboardFocused || compositor.keyboardHolder == id { return true }
        // Asked or not (a compositor without xdg-activation may still focus a window it maps).
        let timeout = configuration.keyGrantTimeout
        let giveUp = Task {
            try? await Task.sleep(for: timeout)
            self.compositor.giveUp(id)
        }
        defer { giveUp.cancel() }
        return await withCheckedContinuation { compositor.waitForKeyboard(id, $0) }
    }

    /// The scene's window got or lost the keyboard (the compositor decided: the user clicked
    /// it, alt-tabbed, or focused another program). The broker's key scene follows.
    func keyboardFocus(_ id: SessionID, focused: Bool) {
        compositor.keyboard(id, focused: focused)
        if focused {
            let moved = changeFocus(source: .compositor) { $0.focused(id) }
            if moved { drivers[id]?.session.lastActiveAt = Date() }
        } else {
            changeFocus(source: .compositor) { $0.unfocused(id) }
        }
    }

    /// Records `state` as the session's.
    func setState(_ id: SessionID, _ state: SceneState) {
        drivers[id]?.session.state = state
    }
}
