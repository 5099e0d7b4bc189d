#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire
import CGtk

/// The scene this process hosts. Setting `title`, `userActivity` or the activation conditions
/// tells the broker at once: the broker keeps the latest and routes activations by them.
@MainActor
public final class Scene {
    /// The session this scene belongs to; it outlives the process.
    public let session: SceneSessionInfo
    /// Where the scene is in its lifecycle, as of the last callback.
    public internal(set) var state: SceneState = .launching

    /// The title the app switcher shows for this session.
    public var title: String {
        didSet {
            guard title != oldValue else { return }
            publish(.with { $0.title = title })
            windowTitleChanged?(title)
        }
    }

    /// The size of the scene's window, when it has one (in the foreground, with a display).
    public internal(set) var windowSize: WindowSize?
    /// Whether the scene's window is the key window: it has the keyboard focus.
    public internal(set) var isKey = false
    /// Whether the scene is presented prominently (modal, over its app's other scenes, which
    /// are dimmed until it is dismissed): a sheet shows a Done button.
    public internal(set) var isProminent = false

    /// The scene's GTK window, when the process has a display (nil headless). The SDK makes it
    /// before ``SceneDelegate/willConnect(to:options:)``, where the app fills it in
    /// (`gtk_window_set_child`), and owns the rest: showing it in the foreground, hiding it in
    /// the background, its title, the pictures the switcher shows, and what closing it means
    /// (the scene disconnects; its session stays).
    public internal(set) var window: UnsafeMutablePointer<GtkWindow>?

    /// Set by the runtime while the scene has a window.
    var windowTitleChanged: ((String) -> Void)?

    /// What the user is doing in the scene now. The broker indexes it for search when it is
    /// eligible, and ``SceneDelegate/stateRestorationActivity(for:)`` returns it by default.
    public var userActivity: UserActivity? {
        didSet {
            guard let userActivity, userActivity != oldValue else { return }
            publish(.with { $0.userActivity = userActivity.wire })
        }
    }

    /// Target content identifiers (shell globs) this scene wants (`prefersToActivate`) or accepts (`canActivate`).
    public var activationConditions = ActivationConditions.default {
        didSet {
            let conditions = activationConditions.wire
            publish(.with { $0.activationConditions = conditions })
        }
    }

    /// The app's shared defaults (every scene of the app sees the same, changes included).
    public let defaults: SharedDefaults
    /// This scene's own storage, saved with its session.
    public let storage: SceneStorage
    /// The sequence of the last update this scene received (events, defaults changes and
    /// drop notices share the app's one order; it only grows).
    public private(set) var lastUpdateSequence: UInt64

    private let publisher: @Sendable (Windowbroker_V1_SceneUpdate) -> Void
    private let requester: @MainActor @Sendable (ControlRequest) async throws -> ControlReply
    /// Requests that must keep their order with this scene's other messages (posts, defaults).
    private let orderedRequester: @MainActor @Sendable (ControlRequest) async throws -> ControlReply
    private var updateSubscribers = MainActorSubscribers<UpdateEvent>(keepingNewest: 1024)

    /// The focused element, outermost first (`["list", "row 3"]`): keyboard commands start
    /// at the deepest element of it that has a responder, then go outwards to the scene.
    public var focusPath: [String] = []
    private(set) var elementResponders: [String: any CommandResponder] = [:]

    /// Handles commands for an element (`path` as in `focusPath`); nil removes it.
    public func setCommandResponder(_ responder: (any CommandResponder)?, forElement path: [String]) {
        elementResponders[path.joined(separator: "/")] = responder
    }

    init(
        session: SceneSessionInfo, sync: SyncSnapshot,
        publisher: @escaping @Sendable (Windowbroker_V1_SceneUpdate) -> Void,
        requester: @escaping @MainActor @Sendable (ControlRequest) async throws -> ControlReply,
        orderedRequester: @escaping @MainActor @Sendable (ControlRequest) async throws -> ControlReply,
        storageWriter: @escaping (String, PlistValue?) -> Void
    ) {
        self.session = session
        self.title = session.title
        self.publisher = publisher
        self.requester = requester
        self.orderedRequester = orderedRequester
        self.lastUpdateSequence = sync.sequence
        self.storage = SceneStorage(sync.storage, onWrite: storageWriter)
        self.defaults = SharedDefaults(sync.defaults) { key, value in
            _ = try await orderedRequester(.defaults(.with {
                $0.key = key
                if let value { $0.value = value.wire } else { $0.remove = true }
            }))
        }
    }

    func sendMenuChange(_ change: Windowbroker_V1_MenuChangeRequest) async throws {
        _ = try await orderedRequester(.menuChange(change))
    }

    // MARK: - Keeping scenes in sync

    /// Posts an event to every connected scene of this app, this one included (one-way data
    /// flow: the model posts, every scene updates from what it receives). Returns the event's
    /// sequence. Throws `payloadTooLarge` or `invalidUserInfo` for a payload the broker refuses.
    @discardableResult
    public func post(_ event: UpdateEvent) async throws -> UInt64 {
        let reply = try await orderedRequester(.post(.with {
            $0.name = event.name
            $0.payload = PlistValue.wire(dictionary: event.payload)
        }))
        guard case .post(let posted) = reply else {
            throw BrokerError(.malformedFrame, "the broker answered a post with something else")
        }
        return posted.sequence
    }

    /// Every update event this scene receives from now on, in the app's order. Each access is
    /// a new subscription; `SceneDelegate.didReceive(_:update:)` sees the same events.
    /// A reader more than 1,024 events behind loses the oldest.
    public var updates: MainActorStream<UpdateEvent> {
        updateSubscribers.subscribe()
    }

    func received(sequence: UInt64) {
        lastUpdateSequence = max(lastUpdateSequence, sequence)
    }

    func broadcast(_ event: UpdateEvent) {
        updateSubscribers.send(event)
    }

    func finishUpdates() {
        updateSubscribers.finish()
        defaults.finish()
    }

    // MARK: - Asking for scenes (UIApplication.requestSceneSessionActivation and friends)

    /// Opens a scene of this app, or brings `session` forward, delivering `activity` to it
    /// (`willConnect` for a new scene, `continue` for a running one). The broker routes an
    /// activity with a `targetContentIdentifier` to a scene that prefers it. Throws the
    /// broker's typed error (`BrokerError`): unknown app or session, undeclared activity type,
    /// invalid userInfo, a prominent scene in the way (`requestDenied`), another app's scene
    /// (`permissionDenied`), no room (`resourceExhausted`).
    public func requestActivation(
        app: AppID? = nil, session: SessionID? = nil, activity: UserActivity? = nil,
        options: ActivationRequestOptions = .init()
    ) async throws -> ActivationOutcome {
        let request = Windowbroker_V1_OpenRequest.with {
            $0.appID = (app ?? (session == nil ? self.session.appID : nil))?.rawValue ?? ""
            $0.sessionID = session?.description ?? ""
            if let activity { $0.activity = activity.wire }
            $0.presentation = options.presentation.wire
            $0.forceNew = options.alwaysNew
        }
        guard case .sessionState(let reply) = try await requester(.open(request)) else {
            throw BrokerError(.malformedFrame, "the broker answered an activation request with something else")
        }
        return ActivationOutcome(reply)
    }

    /// Closes a session of this app (this scene's own, for a Done button): it is discarded,
    /// its app told once (`didDiscardSceneSessions`), its saved state deleted.
    public func requestDestruction(session: SessionID, dismissal: Dismissal = .standard) async throws {
        _ = try await requester(.close(.with {
            $0.sessionID = session.description
            $0.dismissal = dismissal.wire
        }))
    }

    /// Asks the broker to refresh a session's switcher entry: when that scene runs, it is
    /// asked for a fresh title and activity (`SceneDelegate.refresh`).
    public func requestRefresh(session: SessionID) async throws {
        _ = try await requester(.refresh(.with { $0.sessionID = session.description }))
    }

    private func publish(_ update: Windowbroker_V1_SceneUpdate) {
        publisher(update)
    }
}

/// What the broker hands a connecting scene besides its session: the app's defaults, the
/// scene's storage, and where in the app's order of updates it joins.
struct SyncSnapshot {
    var defaults: [String: PlistValue] = [:]
    var storage: [String: PlistValue] = [:]
    var sequence: UInt64 = 0
}

/// How a scene's request for another scene is presented.
public struct ActivationRequestOptions: Sendable {
    /// Beside the requesting scene (`standard`), over it (`prominent`), or the broker's choice (`automatic`).
    public var presentation: Presentation
    /// Always a new scene, even when one prefers the activity's content.
    public var alwaysNew: Bool

    /// Options for ``Scene/requestActivation(app:session:activity:options:)``.
    public init(presentation: Presentation = .standard, alwaysNew: Bool = false) {
        self.presentation = presentation
        self.alwaysNew = alwaysNew
    }
}

/// What an activation request did.
public struct ActivationOutcome: Sendable {
    /// The session that was activated.
    public var session: SessionID
    /// A new session (false: an existing one was brought forward).
    public var created: Bool
    /// The presentation used (`automatic` resolved).
    public var presentation: Presentation
    /// Its state after the request.
    public var state: SceneState
    /// What the broker did, for people (e.g. "activity delivered to the existing scene").
    public var detail: String

    init(_ reply: Windowbroker_V1_SessionStateReply) {
        session = SessionID(reply.sessionID) ?? SessionID()  // the broker always names a valid one
        created = reply.created
        presentation = reply.presentation == .prominent ? .prominent : .standard
        state = SceneState(wire: reply.state)
        detail = reply.detail
    }
}
