#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CGtk
import SceneWorker

/// One note: text and a cursor (a character offset). Its restoration activity carries the
/// note id and text in `userInfo` and the cursor as interaction state.
@MainActor
final class NoteSceneDelegate: SceneDelegate {
    static let activityType = "notes.edit"

    private unowned let app: NotesAppDelegate
    var noteID = ""
    var text = ""
    var cursor = 0
    /// The note's revision this window's text is at (see `NoteStore`).
    var revision: Int64 = 0
    /// The shared default `toolbarHidden`, as observed (the KVO pattern).
    var toolbarHidden = false
    /// Tags (keywords only) and whether the note may be found by search (it may, unless told not).
    var tags: [String] = []
    var searchable = true
    /// Keyboard-command state: pinned (Pin / Unpin Note) and bookmarks added.
    var pinned = false
    var bookmarks = 0
    /// The note's editor in the scene's window (none headless), and the view it was restored
    /// to when there was no window to show it.
    private var editor: NoteEditor?
    private var restoredView: NoteEditor.View?

    init(app: NotesAppDelegate) {
        self.app = app
    }

    func willConnect(to scene: Scene, options: ConnectionOptions) {
        if let restoration = scene.session.restorationActivity {
            load(restoration)
        } else if let activity = options.userActivities.first(where: { $0.activityType == Self.activityType }) {
            load(activity)
            if let requested = activity.interactionState.flatMap(Self.decodeCursor) { cursor = min(requested, text.count) }
        }
        if noteID.isEmpty { noteID = scene.session.id.description }
        app.remember(note: noteID, session: scene.session.id)
        catchUp()
        // Shared defaults are in place before willConnect: a new window starts the way the others look.
        toolbarHidden = scene.defaults["toolbarHidden"]?.boolValue ?? false
        let changes = scene.defaults.changes(for: "toolbarHidden")
        Task { [weak self] in
            for await value in changes { self?.toolbarHidden = value?.boolValue ?? false }
        }
        if let title = options.userActivities.first?.title, !title.isEmpty { scene.title = title }
        scene.activationConditions = ActivationConditions(prefersToActivate: [noteID])
        if let window = scene.window { makeEditor(in: window, for: scene) }
        publish(scene)
    }

    /// The window's editor: what the user types is an edit of the note like any other (saved,
    /// published, told to the note's other windows); where the cursor goes is interaction state.
    private func makeEditor(in window: UnsafeMutablePointer<GtkWindow>, for scene: Scene) {
        let editor = NoteEditor(in: window)
        editor.onEdit = { [weak self, weak scene] newText, newCursor in
            guard let self, let scene else { return }
            self.edit(scene) { text, cursor in
                text = newText
                cursor = newCursor
            }
            Task { await self.textChanged(scene) }
        }
        editor.onCursorMoved = { [weak self, weak scene] newCursor in
            guard let self, let scene, newCursor != self.cursor else { return }
            self.cursor = newCursor
            scene.userActivity = self.currentActivity(scene)
        }
        self.editor = editor
    }

    private func load(_ activity: UserActivity) {
        noteID = activity.userInfo["noteID"]?.stringValue ?? activity.targetContentIdentifier ?? noteID
        tags = activity.keywords.filter { $0.hasPrefix("#") }
        searchable = activity.isEligibleForSearch || activity.userInfo["text"] == nil
        text = activity.userInfo["text"]?.stringValue ?? text
        revision = activity.userInfo["revision"]?.integerValue ?? 0
        pinned = activity.userInfo["pinned"]?.boolValue ?? false
        bookmarks = Int(activity.userInfo["bookmarks"]?.integerValue ?? 0)
    }

    /// Takes the model's text when it is newer than this window's: never the other way round.
    private func catchUp() {
        guard let saved = app.notes.load(note: noteID), saved.revision > revision else { return }
        text = saved.text
        revision = saved.revision
        cursor = min(cursor, text.count)
    }

    /// Every change of the text: on top of the newest revision, saved to the model, published.
    private func edit(_ scene: Scene, _ change: (inout String, inout Int) -> Void) {
        catchUp()
        change(&text, &cursor)
        cursor = max(0, min(cursor, text.count))
        revision += 1
        app.notes.save(.init(revision: revision, text: text), id: noteID)
        publish(scene)
    }

    func restoreInteractionState(_ scene: Scene, with activity: UserActivity, restoration: RestorationRequest) {
        let restored = activity.interactionState.flatMap(Self.decodeInteraction)
        cursor = min(max(0, restored?.cursor ?? 0), text.count)
        publish(scene)  // the current activity carries the cursor again
        if let view = restored?.view {
            // Headless it is kept as it came, for the next window.
            restoredView = view
            editor?.restore(view)
        }
    }

    /// Typing: at the cursor, saved to the model, and told to the app's other windows.
    private func insert(_ inserted: String, in scene: Scene) async {
        edit(scene) { text, cursor in
            let at = min(cursor, text.count)
            text.insert(contentsOf: inserted, at: text.index(text.startIndex, offsetBy: at))
            cursor = at + inserted.count
        }
        await textChanged(scene)
    }

    private func textChanged(_ scene: Scene) async {
        app.drafts.save(text, session: scene.session.id)
        do {
            try await scene.post(UpdateEvent(name: "noteChanged", payload: [
                "noteID": .string(noteID), "text": .string(text), "revision": .integer(revision),
            ]))
        } catch {
            // The other windows catch up from the model when they next need the note.
            var standardError = StandardError()
            print("notes: the change was not announced: \(error)", to: &standardError)
        }
    }

    func stateRestorationActivity(for scene: Scene) -> UserActivity? {
        currentActivity(scene)
    }

    private func currentActivity(_ scene: Scene) -> UserActivity {
        UserActivity(
            activityType: Self.activityType,
            title: scene.title,
            targetContentIdentifier: noteID,
            // Every fact the window shows comes back with it: pinned, and the bookmarks added.
            userInfo: ["noteID": .string(noteID), "text": .string(text), "revision": .integer(revision),
                       "pinned": .bool(pinned), "bookmarks": .integer(Int64(bookmarks))],
            // The note's tags and its first words: what the system's search finds it by.
            keywords: tags + text.split(whereSeparator: { $0.isWhitespace }).prefix(8).map(String.init),
            isEligibleForSearch: searchable,
            interactionState: try? JSONEncoder().encode(Interaction(cursor: cursor, view: editor?.viewState ?? restoredView)),
            persistentIdentifier: scene.session.id.description)
    }

    private func publish(_ scene: Scene) {
        scene.userActivity = currentActivity(scene)
        editor?.show(text: text, cursor: cursor)
    }

    /// The interaction state a note's activity carries: the cursor, and with a window, what
    /// the editor showed (selection, scroll, focus).
    struct Interaction: Codable {
        var cursor: Int
        var view: NoteEditor.View?
    }

    static func decodeInteraction(_ data: Data) -> Interaction? {
        try? JSONDecoder().decode(Interaction.self, from: data)
    }

    static func decodeCursor(_ data: Data) -> Int? {
        decodeInteraction(data)?.cursor
    }

    // MARK: - Keyboard commands (the scene's link of the responder chain)

    func canPerform(_ command: Command, in scene: Scene) -> Bool {
        switch command.id {
        case "notes.uppercase": !text.isEmpty  // nothing to uppercase: not shown, not performed
        case "notes.insertDate", "notes.toggleToolbar", "notes.pin", "notes.addBookmark", "notes.dumpState", "edit.copy", "edit.selectAll": true
        case "notes.openRecent": bookmarks > 0
        default: false
        }
    }

    func validate(_ command: inout CommandValidation, in scene: Scene) {
        if command.id == "notes.pin" {
            command.title = pinned ? "Unpin Note" : "Pin Note"
            command.state = pinned ? .on : .off
        }
    }

    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome {
        switch command.id {
        case "notes.uppercase":
            edit(scene) { text, _ in text = text.uppercased() }
            await textChanged(scene)  // an edit like typing: the note's other windows follow
            return .performed(.string(text))
        case "notes.insertDate":
            let date = Date().formatted(.iso8601.year().month().day())
            edit(scene) { text, cursor in
                text.insert(contentsOf: date, at: text.index(text.startIndex, offsetBy: min(cursor, text.count)))
                cursor += date.count
            }
            await textChanged(scene)
            return .performed(.string(text))
        case "notes.toggleToolbar":
            return await toggleToolbar(scene)
        case "notes.pin":
            pinned.toggle()
            publish(scene)
            return .performed(.bool(pinned))
        case "notes.addBookmark":
            bookmarks += 1
            publish(scene)
            return .performed(.integer(Int64(bookmarks)))
        case "notes.openRecent":
            return .performed(.integer(Int64(bookmarks)))
        case "notes.dumpState":
            return .performed(noteValue(scene))
        case "edit.copy":
            return .performed(.string(text))
        case "edit.selectAll":
            cursor = text.count
            return .performed(.integer(Int64(cursor)))
        default:
            return .declined("notes does not perform \(command.id)")
        }
    }

    /// One-way data flow: whichever window typed, every window on the note shows the text.
    func didReceive(_ scene: Scene, update: UpdateEvent) {
        guard update.name == "noteChanged", update.payload["noteID"]?.stringValue == noteID,
              update.postedBy != scene.session.id, let newText = update.payload["text"]?.stringValue else { return }
        let newRevision = update.payload["revision"]?.integerValue ?? revision + 1
        guard newRevision > revision else { return }  // this window already has newer text
        text = newText
        revision = newRevision
        cursor = min(cursor, text.count)
        publish(scene)
    }

    /// This window fell behind: the note is read back from the model.
    func updatesDropped(_ scene: Scene, from: UInt64, to: UInt64) {
        let before = revision
        catchUp()
        if revision != before { publish(scene) }
    }

    /// requestSceneSessionRefresh reached this note: its title follows the note's first line.
    func refresh(_ scene: Scene) {
        if let first = text.split(separator: "\n", omittingEmptySubsequences: true).first {
            scene.title = String(first.prefix(80))
        }
    }

    /// The actions the manifest declares (`wmctl actions --app notes`): what a script or another
    /// program may ask of a note. Each answers with what changed, as the app sees it.
    func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome {
        switch action.name {
        case "note":
            return .performed(noteValue(scene))
        case "type":
            guard let inserted = action["text"]?.stringValue else { return .declined("type needs text=...") }
            await insert(inserted, in: scene)
            return .performed(noteValue(scene))
        case "set-text":
            // Replaces the whole text (an edit that removes words).
            guard let newText = action["text"]?.stringValue else { return .declined("set-text needs text=...") }
            edit(scene) { text, _ in text = newText }
            await textChanged(scene)
            return .performed(noteValue(scene))
        case "move-cursor":
            guard let position = action["position"]?.integerValue else { return .declined("move-cursor needs position=N") }
            cursor = Int(max(0, min(Int64(text.count), position)))
            publish(scene)
            return .performed(noteValue(scene))
        case "open-in-window":
            // "Open in new window" from a context menu: another note, through the SDK.
            guard let note = action["noteID"]?.stringValue, !note.isEmpty else { return .declined("open-in-window needs noteID=...") }
            guard let presentation = Presentation(rawValue: action["presentation"]?.stringValue ?? Presentation.standard.rawValue) else {
                return .declined("presentation is standard, prominent or modal")
            }
            let activity = UserActivity(
                activityType: Self.activityType, title: note, targetContentIdentifier: note, userInfo: ["noteID": .string(note)])
            return await .performing {
                let outcome = try await scene.requestActivation(activity: activity, options: .init(presentation: presentation))
                return .dictionary([
                    "session": .string(outcome.session.description), "created": .bool(outcome.created),
                    "presentation": .string(outcome.presentation.rawValue), "state": .string(outcome.state.rawValue),
                ])
            }
        case "activate-session":
            guard let session = action["session"]?.stringValue.flatMap(SessionID.init) else { return .declined("activate-session needs session=ID") }
            return await .performing {
                let outcome = try await scene.requestActivation(session: session)
                return .dictionary(["session": .string(outcome.session.description), "presentation": .string(outcome.presentation.rawValue)])
            }
        case "dismiss":
            // The Done button: this scene asks for its own destruction. It does not wait: the
            // answer comes after this process has been told to disconnect.
            let id = scene.session.id
            Task { try? await scene.requestDestruction(session: id) }
            return .performed(.string(id.description))
        case "close-session":
            guard let session = action["session"]?.stringValue.flatMap(SessionID.init) else { return .declined("close-session needs session=ID") }
            return await .performing {
                try await scene.requestDestruction(session: session, dismissal: .commit)
                return .string(session.description)
            }
        case "refresh":
            guard let session = action["session"]?.stringValue.flatMap(SessionID.init) else { return .declined("refresh needs session=ID") }
            return await .performing {
                try await scene.requestRefresh(session: session)
                return .string(session.description)
            }
        case "toggle-toolbar":
            return await toggleToolbar(scene)
        case "scroll":
            // Kept in scene storage: this window's own, back after reclaim, a crash or a restart.
            guard let offset = action["offset"]?.integerValue else { return .declined("scroll needs offset=N") }
            scene.storage["scrollOffset"] = .integer(offset)
            return .performed(noteValue(scene))
        case "tag":
            // A tag goes into the activity's keywords only (as #tag).
            guard let tag = action["tag"]?.stringValue, !tag.isEmpty else { return .declined("tag needs tag=...") }
            tags.append("#" + tag)
            publish(scene)
            return .performed(.list(tags.map { .string($0) }))
        case "searchable":
            // Whether the note's activity is marked eligibleForSearch.
            guard let value = action["value"]?.stringValue, let flag = Bool(value) else { return .declined("searchable needs value=true|false") }
            searchable = flag
            publish(scene)
            return .performed(.bool(flag))
        case "focus":
            // Moves the keyboard focus to an element (`list/row3`); an empty path focuses the scene.
            let path = (action["path"]?.stringValue ?? "").split(separator: "/").map(String.init)
            scene.focusPath = path
            if path.first == "list", path.count == 2 {
                scene.setCommandResponder(RowResponder(name: path[1]), forElement: path)
            }
            return .performed(.string(path.joined(separator: "/")))
        default:
            return .declined("unknown action '\(action.name)'; `wmctl actions \(scene.session.id)` lists the actions notes declares")
        }
    }

    /// The shared default every window follows; written from one window (the action or the
    /// ctrl+shift+t command), and the writer hears it too, in the app's order.
    private func toggleToolbar(_ scene: Scene) async -> ActionOutcome {
        let hidden = !(scene.defaults["toolbarHidden"]?.boolValue ?? false)
        return await .performing {
            try await scene.defaults.set(.bool(hidden), forKey: "toolbarHidden")
            return .bool(hidden)
        }
    }

    /// What the window's editor shows, when there is one: its text (the model's, unless they
    /// parted), selection, scroll offset and focus.
    private var editorValue: [String: PlistValue] {
        guard let editor else { return [:] }
        let view = editor.viewState
        return [
            "windowText": .string(editor.text),
            "selection": .list(view.selection.map { .integer(Int64($0)) }),
            "scroll": .real(view.scroll),
            "focused": .bool(view.focused),
        ]
    }

    /// The note as the app sees it: what `note`, the edits and Dump State answer.
    private func noteValue(_ scene: Scene) -> PlistValue {
        .dictionary([
            "noteID": .string(noteID),
            "text": .string(text),
            "cursor": .integer(Int64(cursor)),
            "revision": .integer(revision),
            "tags": .list(tags.map { .string($0) }),
            "pinned": .bool(pinned),
            "bookmarks": .integer(Int64(bookmarks)),
            "toolbarHidden": .bool(toolbarHidden),
            "scrollOffset": scene.storage["scrollOffset"] ?? .null,
        ].merging(editorValue) { $1 })
    }
}
