import Foundation
import SceneWorker

/// The scene delegate around the app's own. Every callback is recorded, then handed to the
/// app's delegate unchanged; what it answers is what the SDK gets. The probe's own actions
/// (`ProbeActions`) come first, every other action goes to the app.
@MainActor
final class ProbeSceneDelegate: SceneDelegate {
    let scene: any SceneDelegate
    unowned let app: ProbeAppDelegate
    /// Stop answering when asked for the restoration activity.
    var hangOnSave = false
    /// How long producing the restoration activity takes (a slow save, not a hang).
    var saveDelayMilliseconds = 0
    var continued: [String] = []
    /// Codes of the scene updates the broker refused.
    var refusedUpdates: [String] = []
    /// Update events received, the sequences of everything received in the app's order (the
    /// last 512), and the drop notices (from, to).
    var updatesReceived = 0
    var sequences: [UInt64] = []
    var droppedUpdates: [(UInt64, UInt64)] = []
    /// The shared default `toolbarHidden` as observed through `changes(for:)`, and as it was
    /// in willConnect.
    var toolbarHidden = false
    var toolbarHiddenAtConnect = false
    var toolbarChanges = 0
    /// didBecomeKey / didResignKey in the order they came, and the window sizes given.
    var keyChanges: [String] = []
    var sizes: [String] = []
    /// Memory held on purpose (`allocate`): like user data, kept on a warning.
    var ballast: [UnsafeMutableRawBufferPointer] = []
    /// A cache (`fill-cache`): dropped on a memory warning.
    var cache: [UnsafeMutableRawBufferPointer] = []

    /// How long restoreInteractionState takes, in scene storage: kept across reclaims and
    /// restarts whichever activity the scene is restored from, and dropped when it starts
    /// without one (as after its restoration was set aside).
    static let restoreDelayKey = "probe.restoreDelayMs"

    init(wrapping scene: any SceneDelegate, app: ProbeAppDelegate) {
        self.scene = scene
        self.app = app
    }

    private func record(_ callback: String) {
        app.callbacks.append(callback)
    }

    /// Records `callback`, then hands it to the app's delegate.
    private func recorded<T>(_ callback: String, _ call: (any SceneDelegate) -> T) -> T {
        record(callback)
        return call(scene)
    }

    // MARK: - Lifecycle

    func willConnect(to scene: Scene, options: ConnectionOptions) {
        record("willConnect")
        if scene.session.restorationActivity == nil { scene.storage[Self.restoreDelayKey] = nil }
        toolbarHidden = scene.defaults["toolbarHidden"]?.boolValue ?? false
        toolbarHiddenAtConnect = toolbarHidden
        let changes = scene.defaults.changes(for: "toolbarHidden")
        Task { [weak self] in
            for await value in changes {
                self?.toolbarHidden = value?.boolValue ?? false
                self?.toolbarChanges += 1
            }
        }
        self.scene.willConnect(to: scene, options: options)
        if let child = options.userActivities.first?.userInfo["openOnConnect"]?.stringValue, let type = options.userActivities.first?.activityType {
            // Asking for another scene from inside willConnect: it must not deadlock.
            Task {
                _ = try? await scene.requestActivation(activity: UserActivity(
                    activityType: type, title: child, targetContentIdentifier: child, userInfo: ["noteID": .string(child)]))
            }
        }
    }

    func didDisconnect(_ scene: Scene) { recorded("didDisconnect") { $0.didDisconnect(scene) } }
    func willEnterForeground(_ scene: Scene) { recorded("willEnterForeground") { $0.willEnterForeground(scene) } }
    func didBecomeActive(_ scene: Scene) { recorded("didBecomeActive") { $0.didBecomeActive(scene) } }
    func willResignActive(_ scene: Scene) { recorded("willResignActive") { $0.willResignActive(scene) } }
    func didEnterBackground(_ scene: Scene) { recorded("didEnterBackground") { $0.didEnterBackground(scene) } }
    func refresh(_ scene: Scene) { recorded("refresh") { $0.refresh(scene) } }

    func stateRestorationActivity(for scene: Scene) -> UserActivity? {
        record("stateRestorationActivity")
        if hangOnSave {
            // A scene stuck in its own code: the broker's deadline must fire.
            sleep(3600)  // blocks the main thread on purpose: nothing answers any more
        }
        if saveDelayMilliseconds > 0 { Thread.sleep(forTimeInterval: Double(saveDelayMilliseconds) / 1000) }
        return self.scene.stateRestorationActivity(for: scene)
    }

    func restoreInteractionState(_ scene: Scene, with activity: UserActivity, restoration: RestorationRequest) {
        record("restoreInteractionState")
        self.scene.restoreInteractionState(scene, with: activity, restoration: restoration)
        guard let delay = scene.storage[Self.restoreDelayKey]?.integerValue, delay > 0 else { return }
        restoration.extend()
        Task { @MainActor in
            try? await Task.sleep(for: .milliseconds(delay))
            restoration.complete()
        }
    }

    func `continue`(_ scene: Scene, activity: UserActivity) {
        record("continue")
        continued.append(activity.activityType)
        self.scene.continue(scene, activity: activity)
    }

    func didReceiveMemoryWarning(_ scene: Scene, level: MemoryWarningLevel) -> Int {
        record("didReceiveMemoryWarning")
        let freed = cache.reduce(0) { $0 + $1.count }
        cache.forEach { $0.deallocate() }
        cache.removeAll()
        return freed + self.scene.didReceiveMemoryWarning(scene, level: level)
    }

    // MARK: - Sync

    func updateRefused(_ scene: Scene, error: BrokerError) {
        refusedUpdates.append("\(error.code)")
        self.scene.updateRefused(scene, error: error)
    }

    func didReceive(_ scene: Scene, update: UpdateEvent) {
        updatesReceived += 1
        remember(update.sequence)
        self.scene.didReceive(scene, update: update)
    }

    func updatesDropped(_ scene: Scene, from: UInt64, to: UInt64) {
        droppedUpdates.append((from, to))
        remember(to)
        self.scene.updatesDropped(scene, from: from, to: to)
    }

    func defaultsDidChange(_ scene: Scene, key: String, value: PlistValue?) {
        remember(scene.lastUpdateSequence)
        self.scene.defaultsDidChange(scene, key: key, value: value)
    }

    private func remember(_ sequence: UInt64) {
        guard sequence != sequences.last else { return }  // a notice and the defaults it carried
        sequences.append(sequence)
        if sequences.count > 512 { sequences.removeFirst(sequences.count - 512) }
    }

    // MARK: - The window

    func sizeDidChange(_ scene: Scene, to size: WindowSize) {
        sizes.append("\(size)")
        self.scene.sizeDidChange(scene, to: size)
    }

    func didBecomeKey(_ scene: Scene) {
        keyChanges.append("didBecomeKey")
        self.scene.didBecomeKey(scene)
    }

    func didResignKey(_ scene: Scene) {
        keyChanges.append("didResignKey")
        self.scene.didResignKey(scene)
    }

    // MARK: - Commands and actions

    func canPerform(_ command: Command, in scene: Scene) -> Bool {
        self.scene.canPerform(command, in: scene)
    }

    func validate(_ command: inout CommandValidation, in scene: Scene) {
        self.scene.validate(&command, in: scene)
    }

    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome {
        record("command:\(command.id)")
        return await self.scene.perform(command, in: scene)
    }

    func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome {
        if let outcome = await ProbeActions.perform(action, in: scene, probe: self) { return outcome }
        return await self.scene.perform(scene, action: action)
    }
}
