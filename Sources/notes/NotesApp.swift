/// notes: the reference app. Each scene edits one note (text and cursor) and exercises every
/// SceneWorker callback; its `state` action reports the callbacks this process received, in order.
import Foundation
import IPCWire
import SceneWorker

@main
struct NotesMain {
    static func main() async {
        await SceneWorker.run(NotesAppDelegate())
    }
}

@MainActor
final class NotesAppDelegate: AppDelegate {
    /// Every delegate callback this process received, app-level and scene-level, in order.
    var callbacks: [String] = []
    let drafts = DraftStore()
    /// The model every window of a note shares: what a scene that fell behind reloads.
    let notes = NoteStore()

    func didFinishLaunching() {
        callbacks.append("didFinishLaunching")
    }

    func didDiscardSceneSessions(_ sessionIDs: [String]) {
        callbacks.append("didDiscardSceneSessions")
        discardedSessions += sessionIDs
        for id in sessionIDs { drafts.delete(session: id) }
    }

    var discardedSessions: [String] = []
    /// How often this process was asked for a session's configuration (only for new sessions).
    var configurationQuestions = 0

    /// A new note may ask for another of the app's configurations through its activity.
    func configurationName(forConnecting session: SceneSessionInfo, options: ConnectionOptions) -> String? {
        configurationQuestions += 1
        return options.userActivities.first?.userInfo["configuration"]?.stringValue
    }

    func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate {
        NoteSceneDelegate(app: self)
    }

    /// Added at runtime (not in the manifest): every process of the app adds the same.
    func buildMenu(with builder: inout MenuBuilder) {
        builder.insertChild(.command(id: "notes.wordCount", title: "Word Count", shortcut: "ctrl+shift+w"), atEndOf: "view")
    }

    // App-level commands: the last link of the responder chain before the system.
    func canPerform(_ command: Command, in scene: Scene) -> Bool {
        command.id == "notes.newWindow" || command.id == "notes.wordCount"
    }

    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome {
        if command.id == "notes.wordCount" {
            return .performed(.integer(Int64(scene.title.split(separator: " ").count)))
        }
        // "New Note Window": a new scene through the scene-driven activation API.
        do {
            let outcome = try await scene.requestActivation(
                activity: UserActivity(activityType: NoteSceneDelegate.activityType, title: "New Note"),
                options: .init(alwaysNew: true))
            return .performed(.string(outcome.session))
        } catch {
            return .declined("\(error)")
        }
    }
}

/// A row of the note's list, focusable (`focus --arg path=list/row3`): it copies itself.
@MainActor
final class RowResponder: CommandResponder {
    let name: String
    init(name: String) { self.name = name }

    func canPerform(_ command: Command, in scene: Scene) -> Bool { command.id == "edit.copy" }

    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome {
        .performed(.string("copied \(name)"))
    }
}

/// Where the app keeps its files: $NOTES_DATA_DIR, else $XDG_DATA_HOME/windowbroker-notes.
private let dataDirectory: String = {
    let env = ProcessInfo.processInfo.environment
    if let dir = env["NOTES_DATA_DIR"], !dir.isEmpty { return dir }
    let dataHome = env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory() + "/.local/share"
    return dataHome + "/windowbroker-notes"
}()

/// The notes themselves, one file per note id: the model. A window that types saves the note
/// here and then posts `noteChanged`; a window that missed updates reads it back.
struct NoteStore {
    let directory = dataDirectory + "/notes"

    func save(_ text: String, note: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? text.write(toFile: path(note), atomically: true, encoding: .utf8)
    }

    func load(note: String) -> String? {
        try? String(contentsOfFile: path(note), encoding: .utf8)
    }

    /// Note ids are anything a user typed: the file name is their UTF-8 in hex.
    private func path(_ note: String) -> String {
        directory + "/" + note.utf8.map { String(format: "%02x", $0) }.joined() + ".txt"
    }
}

/// Drafts on disk, one file per session: what the app deletes when a session is discarded.
struct DraftStore {
    let directory = dataDirectory + "/drafts"

    func save(_ text: String, session: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? text.write(toFile: path(session), atomically: true, encoding: .utf8)
    }

    func delete(session: String) {
        try? FileManager.default.removeItem(atPath: path(session))
    }

    func path(_ session: String) -> String { directory + "/" + session + ".txt" }
}
