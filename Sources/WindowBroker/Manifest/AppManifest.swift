import Foundation
import IPCWire

/// What the broker knows about an app: read from one JSON file per app in an apps directory.
///
/// ```json
/// {
///   "id": "notes",
///   "name": "Notes",
///   "executable": "notes",
///   "arguments": [],
///   "supportsMultipleScenes": true,
///   "configurations": [
///     { "name": "Default", "role": "windowApplication", "delegate": "NoteSceneDelegate",
///       "canActivate": ["*"], "prefersToActivate": [] }
///   ],
///   "activityTypes": ["notes.edit"],
///   "prewarm": 1,
///   "zygote": true,
///   "actions": [{ "name": "type", "arguments": ["text"], "description": "Types text at the cursor." }]
/// }
/// ```
/// `executable` is an absolute path, a path relative to the manifest's directory (it contains
/// a `/`), or a bare name looked up beside `windowbrokerd` and then on `PATH`.
public struct AppManifest: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable, Codable {
        public var name: String
        public var role: String
        public var delegate: String
        /// Glob patterns on `targetContentIdentifier` this configuration may be used for (default: all).
        public var canActivate: [String]?
        public var prefersToActivate: [String]?
    }

    /// An action the app's scenes take (`wmctl send SESSION NAME --arg K=V`): declared so that
    /// people and completions can find it (`wmctl actions`).
    public struct Action: Sendable, Equatable, Codable {
        public var name: String
        public var description: String?
        public var arguments: [String]?
    }

    public var id: AppID
    public var name: String
    public var executable: String
    public var arguments: [String]
    public var supportsMultipleScenes: Bool
    public var configurations: [Configuration]
    public var activityTypes: [String]
    /// How many started, handshaken, idle processes the broker keeps for this app, bound to a
    /// session only when one is opened or activated (Android's zygote / iOS's prewarming idea).
    public var prewarm: Int
    /// Whether the app's workers are forked from a zygote: one process of the app that has
    /// loaded and relocated itself and forks each new worker, which then starts as if exec'd
    /// (see `AppZygotes`). Only for apps built on the SceneWorker SDK with a static Swift
    /// runtime; any other build says why it cannot, and its workers are spawned as usual.
    public var zygote = false
    /// The file it was read from, for messages.
    public var source: String
    public var actions: [Action] = []
    /// The system menu with the manifest's `menus` and `commands` inserted.
    public var mainMenu = MainMenu.system
    /// What of those could not be inserted: "file: command 'id': reason". The rest loaded.
    public var commandErrors: [String] = []

    public static let defaultRole = "windowApplication"

    public func configuration(named name: String) -> Configuration? {
        configurations.first { $0.name == name }
    }

    public func declares(activityType: String) -> Bool {
        activityTypes.contains(activityType)
    }
}
