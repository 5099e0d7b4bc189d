import Foundation
import Glibc
import IPCWire

/// An activation request as the broker receives it (`requestSceneSessionActivation`), from
/// wmctl or from a scene (`requestedBy`).
public struct ActivationRequest: Sendable {
    public var appID: AppID?
    public var sessionID: SessionID?
    public var activity: UserActivity?
    /// Always create a new scene (`wmctl open --new`).
    public var forceNew: Bool
    /// Asked for; `automatic` is resolved by the broker (`Broker.presentation(for:target:)`).
    public var presentation: Presentation
    /// The scene that asked; nil for wmctl.
    public var requestedBy: SessionID?
    /// The configuration a new session must use (`wmctl open --configuration`).
    public var configuration: String?
    /// The requester's xdg-activation token: the scene's window asks for focus with it.
    public var activationToken: String?

    public init(
        appID: AppID?, sessionID: SessionID?, activity: UserActivity?, forceNew: Bool,
        presentation: Presentation = .standard, requestedBy: SessionID? = nil
    ) {
        self.appID = appID
        self.sessionID = sessionID
        self.activity = activity
        self.forceNew = forceNew
        self.presentation = presentation
        self.requestedBy = requestedBy
    }
}


/// Where an activation goes.
public enum ActivationDecision: Sendable, Equatable {
    /// Bring this existing session forward and deliver the activity to it.
    case existing(SessionID, reason: String)
    /// Create a new session with this configuration.
    case create(configuration: String, role: String)
}

/// Pure routing of an activation request to a session, following docs/LIFECYCLE.md: an explicit
/// session wins; otherwise the target content identifier is matched against the scenes'
/// activation conditions (a preferring scene is reused); otherwise a new session is created,
/// unless the app supports only one scene.
public enum ActivationRouter {
    public static func route(
        _ request: ActivationRequest, app: AppManifest, sessions: some Sequence<SceneSession>
    ) throws(BrokerError) -> ActivationDecision {
        if let activity = request.activity, !app.declares(activityType: activity.activityType) {
            let declared = app.activityTypes.isEmpty ? "none" : app.activityTypes.joined(separator: ", ")
            throw BrokerError(
                .undeclaredActivityType,
                "app '\(app.id)' does not declare activity type '\(activity.activityType)' (declared: \(declared))")
        }
        // One pass, no sorting and no copy of the list: an open runs this over every session of
        // the app, and sorting them all by recency cost more than the rest of the open's routing.
        let ofApp = sessions.lazy.filter { $0.appID == app.id }
        /// The most recently active session of the app that `accepts` (the first such on a tie).
        func mostRecent(where accepts: (SceneSession) -> Bool = { _ in true }) -> SceneSession? {
            var found: SceneSession?
            for session in ofApp where accepts(session) && (found.map { session.lastActiveAt > $0.lastActiveAt } ?? true) {
                found = session
            }
            return found
        }
        if let sessionID = request.sessionID {
            guard ofApp.contains(where: { $0.id == sessionID }) else {
                throw BrokerError(.unknownSession, "no session \(sessionID) of app '\(app.id)'")
            }
            return .existing(sessionID, reason: "brought forward as requested")
        }
        if !app.supportsMultipleScenes, let only = mostRecent() {
            if request.forceNew {
                throw BrokerError(
                    .multipleScenesUnsupported,
                    "app '\(app.id)' does not support multiple scenes; its scene \(only.id) is unchanged (omit --new to activate it instead)")
            }
            return .existing(only.id, reason: "app supports a single scene")
        }
        let target = request.activity?.targetContentIdentifier
        if !request.forceNew, let target {
            // A scene's own conditions, or its configuration's from the manifest.
            if let preferring = mostRecent(where: {
                let conditions = $0.activationConditions
                return (matches(target, any: conditions.prefersToActivate)
                    || matches(target, any: app.configuration(named: $0.configuration)?.prefersToActivate ?? []))
                    && matches(target, any: conditions.canActivate)
            }) {
                return .existing(preferring.id, reason: "scene prefers to activate '\(target)'")
            }
        }
        if let named = request.configuration {
            guard let chosen = app.configuration(named: named) else {
                let known = app.configurations.map(\.name).joined(separator: ", ")
                throw BrokerError(.invalidRequest, "app '\(app.id)' has no configuration '\(named)' (declared: \(known))")
            }
            if let target, !matches(target, any: chosen.canActivate ?? ["*"]) {
                throw BrokerError(.requestDenied, "configuration '\(named)' of app '\(app.id)' cannot activate '\(target)'")
            }
            return .create(configuration: chosen.name, role: chosen.role)
        }
        let candidates = app.configurations.filter { $0.role == AppManifest.defaultRole } + app.configurations
        // A configuration that prefers the target wins over the first one that merely can.
        let preferred = target.flatMap { target in candidates.first { matches(target, any: $0.prefersToActivate ?? []) } }
        let configuration = preferred ?? candidates.first { configuration in
            guard let target else { return true }
            return matches(target, any: configuration.canActivate ?? ["*"])
        }
        guard let configuration else {
            throw BrokerError(.requestDenied, "no configuration of app '\(app.id)' can activate '\(target ?? "")'")
        }
        return .create(configuration: configuration.name, role: configuration.role)
    }

    /// Shell-glob match of a target content identifier against patterns.
    public static func matches(_ target: String, any patterns: [String]) -> Bool {
        patterns.contains { fnmatch($0, target, 0) == 0 }
    }
}
