/// notes, the reference app: each window edits one note (text and cursor), shares it with the
/// note's other windows, comes back as it was after a reclaim, a crash or a restart, and has
/// menus and keyboard commands. The `notes` executable runs it; the tests' `scene-probe` runs
/// the same app with its test-only actions around it.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import SceneWorker

/// The app, ready for `SceneWorker.run`.
@MainActor
public func makeNotesApp() -> any AppDelegate {
    NotesAppDelegate()
}

@MainActor
final class NotesAppDelegate: AppDelegate {
    let drafts = DraftStore()
    /// The model every window of a note shares: what a scene that fell behind reloads.
    let notes = NoteStore()

    /// Which note each new scene shows, until it is written to the drafts' index. Made with
    /// room for one, and emptied keeping it: the first insert into a `[SessionID: String]`
    /// builds its storage's generic metadata, 15% of what a prewarmed scene did for its open
    /// (`perf`, 15 opens); made here, that is paid when the app launches (in the zygote, once
    /// for all of the app's scenes), not while a window waits.
    private var unwrittenIndex = [SessionID: String](minimumCapacity: 1)

    /// Filled once and emptied, for the same reason: emptying it keeping its room goes through
    /// its storage type's generic metadata (`_NativeDictionary<SessionID, String>`), whose
    /// requirements cost a scan of every conformance record, and each forked scene paid that
    /// right after its open was answered (`perf`, 30 forked scenes).
    init() {
        unwrittenIndex[SessionID()] = ""
        unwrittenIndex.removeAll(keepingCapacity: true)
    }

    /// Notes which note a session shows, for a later discard. Written once the open has been
    /// answered, in a main-actor task of its own: creating the index file (a new inode) was
    /// the largest single cost of a prewarmed scene's `willConnect`, and the window waits for
    /// none of it.
    func remember(note: String, session: SessionID) {
        let scheduled = !unwrittenIndex.isEmpty
        unwrittenIndex[session] = note
        if !scheduled { Task { self.writeIndex() } }
    }

    private func writeIndex() {
        for (session, note) in unwrittenIndex { drafts.remember(note: note, session: session) }
        unwrittenIndex.removeAll(keepingCapacity: true)
    }

    /// The sessions are gone for good: their drafts go, and a note no other session shows goes
    /// too (closing a note's window in the switcher leaves none of its text behind).
    func didDiscardSceneSessions(_ sessionIDs: [SessionID]) {
        writeIndex()  // a discard may come before the task that writes it
        for id in sessionIDs {
            drafts.delete(session: id)
            if let note = drafts.forget(session: id), !drafts.isShown(note: note) {
                notes.delete(note: note)
            }
        }
    }

    /// A new note may ask for another of the app's configurations through its activity; an
    /// open that carries no activity at all (`wmctl open notes`) is the library.
    func configurationName(forConnecting session: SceneSessionInfo, options: ConnectionOptions) -> String? {
        guard let first = options.userActivities.first else { return "Library" }
        return first.userInfo["configuration"]?.stringValue
            ?? (first.activityType == NoteLibraryDelegate.activityType ? "Library" : nil)
    }

    func makeSceneDelegate(for session: SceneSessionInfo) -> any SceneDelegate {
        session.configuration == "Library" ? NoteLibraryDelegate(app: self) : NoteSceneDelegate(app: self)
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
            return .performed(.string(outcome.session.description))
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
    // getenv, not ProcessInfo: the app is made before anything else in the process has built
    // the environment dictionary, and that first build is a measurable part of a cold open.
    func variable(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }
    if let dir = variable("NOTES_DATA_DIR") { return dir }
    let dataHome = variable("XDG_DATA_HOME") ?? (variable("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.local/share"
    return dataHome + "/windowbroker-notes"
}()

/// The notes themselves, one file per note id: the model. A window that types saves the note
/// here and then posts `noteChanged`; a window that missed updates reads it back. Each save
/// carries a revision one above the last, so a window restored from an older activity (its
/// process was reclaimed, or the broker crashed) sees that the file is newer and takes it
/// instead of writing its older text over it.
struct NoteStore {
    let directory = dataDirectory + "/notes"

    struct Saved: Codable, Equatable {
        var revision: Int64
        var text: String
    }

    func save(_ note: Saved, id: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard let data = try? JSONEncoder().encode(note) else { return }
        try? data.write(to: URL(fileURLWithPath: path(id)), options: .atomic)
    }

    func load(note id: String) -> Saved? {
        guard let data = Self.read(path(id)) else { return nil }
        return try? JSONDecoder().decode(Saved.self, from: data)
    }

    /// A whole file's bytes, nil when it cannot be read. A note that does not exist yet (every
    /// new window's) costs one failed `open`, not FileManager's read path, whose first use in a
    /// process was a measurable part of opening a window.
    private static func read(_ path: String) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return data }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            data.append(contentsOf: chunk[..<count])
        }
    }

    /// A note as the library lists it.
    struct Listed: Equatable {
        var id: String
        var text: String
        var modified: Date
        /// Its first line that has words, else "New Note".
        var title: String {
            text.split(separator: "\n").first { !$0.allSatisfy(\.isWhitespace) }.map { String($0.prefix(80)) } ?? "New Note"
        }
    }

    /// Every note kept, the most recently changed first.
    func list() -> [Listed] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name -> Listed? in
            guard name.hasSuffix(".json"), let id = Self.unhex(String(name.dropLast(5))), let saved = load(note: id) else { return nil }
            var info = stat()
            let modified = stat(directory + "/" + name, &info) == 0
                ? Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9) : .distantPast
            return Listed(id: id, text: saved.text, modified: modified)
        }.sorted { ($0.modified, $0.id) > ($1.modified, $1.id) }
    }

    /// A note id back from its file name; nil for a name that is no id's.
    static func unhex(_ name: String) -> String? {
        let digits = Array(name.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for at in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[at..<at + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Closing a note's last window deletes what the app kept of it: a discard leaves no text behind.
    func delete(note id: String) {
        try? FileManager.default.removeItem(atPath: path(id))
    }

    /// Note ids are anything a user typed: the file name is their UTF-8 in lowercase hex.
    private func path(_ note: String) -> String {
        directory + "/" + Self.hex(note) + ".json"
    }

    /// Two digits a byte, written straight into the string's storage. Every new window looks
    /// its note up: a string per byte from the generic `String(_:radix:)`, then `joined()`,
    /// was a fifth of a prewarmed scene's CPU in its connect (`perf`, 13 opens), most of it
    /// the runtime building their metadata at first use in each process.
    static func hex(_ text: String) -> String {
        func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10 }
        let bytes = text.utf8
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var at = 0
            for byte in bytes {
                buffer[at] = digit(byte >> 4)
                buffer[at + 1] = digit(byte & 0xF)
                at += 2
            }
            return at
        }
    }
}

/// Drafts on disk, one file per session: what the app deletes when a session is discarded.
struct DraftStore {
    let directory = dataDirectory + "/drafts"

    func save(_ text: String, session: SessionID) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? text.write(toFile: path(session), atomically: true, encoding: .utf8)
    }

    func delete(session: SessionID) {
        try? FileManager.default.removeItem(atPath: path(session))
    }

    func path(_ session: SessionID) -> String { directory + "/\(session).txt" }

    /// Which note each session shows (`<session>.note`): what a discard needs to find the note.
    /// Replaced whole (written aside, then renamed) but not forced to disk: a window opens
    /// without waiting for an fsync (0.7 ms here), and a crash before the disk has it loses
    /// only this index entry, which the session's restoration activity also holds.
    func remember(note: String, session: SessionID) {
        // Foundation's Data.write forces the file to disk even when not atomic: plain POSIX.
        // The directory is made only when it is missing, not with a mkdir at every open.
        let file = directory + "/\(session).note"
        let create = { open(file + ".new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }
        var fd = create()
        if fd < 0, errno == ENOENT {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            fd = create()
        }
        guard fd >= 0 else { return }
        let bytes = Array(note.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if written == bytes.count { rename(file + ".new", file) }
    }

    /// Forgets the session's note and returns it.
    func forget(session: SessionID) -> String? {
        let file = directory + "/\(session).note"
        defer { try? FileManager.default.removeItem(atPath: file) }
        return FileManager.default.contents(atPath: file).map { String(decoding: $0, as: UTF8.self) }
    }

    func isShown(note: String) -> Bool {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.contains { $0.hasSuffix(".note") && FileManager.default.contents(atPath: directory + "/" + $0) == Data(note.utf8) }
    }
}
