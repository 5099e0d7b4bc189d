#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CGtk
import SceneWorker

/// The library scene (notes' second configuration, as iPad Notes has its list beside its
/// editors): every note, newest first, filtered by a search field. Opening one opens its
/// editor scene, or brings forward the one that shows it. `wmctl open notes` with no activity
/// opens it.
@MainActor
final class NoteLibraryDelegate: SceneDelegate {
    static let activityType = "notes.library"

    private unowned let app: NotesAppDelegate
    /// What the search field holds: notes whose text contains it (ignoring case) are listed.
    var query = ""
    /// Every note, newest first: read from the app's files when the library comes to the
    /// front, kept current from the notes' `noteChanged` updates meanwhile.
    private var notes: [NoteStore.Listed] = []
    /// Whether `notes` is to be read again at the next foreground (it was away).
    private var listingStale = false
    /// The notes listed (those the query finds), in the order shown.
    private(set) var items: [NoteStore.Listed] = []
    private var view: LibraryView?

    init(app: NotesAppDelegate) {
        self.app = app
    }

    func willConnect(to scene: Scene, options: ConnectionOptions) {
        query = scene.session.restorationActivity?.userInfo["query"]?.stringValue ?? ""
        scene.title = "Notes"
        if let window = scene.window {
            let view = LibraryView(in: window, query: query)
            view.onQuery = { [weak self, weak scene] text in
                guard let self, let scene else { return }
                self.query = text
                self.show(scene)
            }
            view.onOpen = { [weak self, weak scene] index in
                guard let self, let scene, self.items.indices.contains(index) else { return }
                let note = self.items[index].id
                Task { _ = try? await self.open(note, from: scene) }
            }
            self.view = view
        }
        notes = app.notes.list()
        show(scene)
    }

    /// Shows the notes the query finds.
    private func show(_ scene: Scene) {
        let needle = query.lowercased()
        items = notes.filter { needle.isEmpty || $0.text.lowercased().contains(needle) }
        view?.show(items.map(\.title))
        scene.userActivity = UserActivity(activityType: Self.activityType, title: "Notes", userInfo: ["query": .string(query)])
    }

    /// Opens the note's editor scene, or activates the one that already shows it (an editor
    /// prefers its note's id).
    private func open(_ note: String, from scene: Scene) async throws -> ActivationOutcome {
        let activity = UserActivity(
            activityType: NoteSceneDelegate.activityType, title: items.first { $0.id == note }?.title ?? note,
            targetContentIdentifier: note, userInfo: ["noteID": .string(note)])
        return try await scene.requestActivation(activity: activity)
    }

    /// A note changed in some window: it is the newest now, with the text the update carries
    /// (no file is read for it).
    func didReceive(_ scene: Scene, update: UpdateEvent) {
        guard update.name == "noteChanged", let id = update.payload["noteID"]?.stringValue,
              let text = update.payload["text"]?.stringValue else { return }
        notes.removeAll { $0.id == id }
        notes.insert(NoteStore.Listed(id: id, text: text, modified: Date()), at: 0)
        show(scene)
    }

    func didEnterBackground(_ scene: Scene) {
        listingStale = true  // its updates stop coming once it is reclaimed
    }

    func willEnterForeground(_ scene: Scene) {
        guard listingStale else { return }
        listingStale = false
        notes = app.notes.list()  // notes written, or deleted, while it was away
        show(scene)
    }

    func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome {
        switch action.name {
        case "items":
            // What the library lists, in order: each note's id and title, and where its row is
            // in the window (when there is one).
            let frames = view?.rowFrames() ?? []
            return .performed(.list(items.enumerated().map { index, item in
                var entry: [String: PlistValue] = ["noteID": .string(item.id), "title": .string(item.title)]
                if index < frames.count {
                    let frame = frames[index]
                    entry["frame"] = .list([frame.x, frame.y, frame.width, frame.height].map { .integer(Int64($0)) })
                }
                return .dictionary(entry)
            }))
        case "search":
            query = action["text"]?.stringValue ?? ""
            view?.setQuery(query)
            show(scene)
            return .performed(.integer(Int64(items.count)))
        case "open":
            guard let note = action["noteID"]?.stringValue, !note.isEmpty else { return .declined("open needs noteID=...") }
            return await .performing {
                let outcome = try await open(note, from: scene)
                return .dictionary(["session": .string(outcome.session.description), "created": .bool(outcome.created)])
            }
        default:
            return .declined("the library knows items, search and open; `wmctl actions notes` lists the editor's")
        }
    }
}

/// The library's window: a search field over a list of rows, one per note.
@MainActor
final class LibraryView {
    private let list: UnsafeMutablePointer<GtkWidget>
    private let search: UnsafeMutablePointer<GtkWidget>
    private var rows: [UnsafeMutablePointer<GtkWidget>] = []
    /// Set while the search field is filled in by the scene, not typed into.
    private var applying = false
    var onQuery: ((String) -> Void)?
    var onOpen: ((Int) -> Void)?
    private let window: UnsafeMutablePointer<GtkWindow>

    init(in window: UnsafeMutablePointer<GtkWindow>, query: String) {
        self.window = window
        search = gtk_search_entry_new()
        list = gtk_list_box_new()
        gtk_widget_add_css_class(list, "navigation-sidebar")
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0)!
        let scrolled = gtk_scrolled_window_new()!
        gtk_widget_set_vexpand(scrolled, 1)
        gtk_scrolled_window_set_child(OpaquePointer(scrolled), list)
        gtk_box_append(UnsafeMutableRawPointer(box).assumingMemoryBound(to: GtkBox.self), search)
        gtk_box_append(UnsafeMutableRawPointer(box).assumingMemoryBound(to: GtkBox.self), scrolled)
        gtk_window_set_child(window, box)
        // Typing anywhere in the window searches, as in GNOME's own lists.
        gtk_search_entry_set_key_capture_widget(OpaquePointer(search), box)
        setQuery(query)
        let context = Unmanaged.passUnretained(self).toOpaque()
        typealias Changed = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let changed: Changed = { entry, context in
            MainActor.assumeIsolated {
                guard let view = LibraryView.from(context), !view.applying else { return }
                view.onQuery?(String(cString: gtk_editable_get_text(OpaquePointer(entry))))
            }
        }
        _ = wb_signal_connect(search, "search-changed", unsafeBitCast(changed, to: UnsafeRawPointer.self), context)
        typealias Activated = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let activated: Activated = { _, row, context in
            MainActor.assumeIsolated {
                guard let view = LibraryView.from(context), let row else { return }
                view.onOpen?(Int(gtk_list_box_row_get_index(row.assumingMemoryBound(to: GtkListBoxRow.self))))
            }
        }
        _ = wb_signal_connect(list, "row-activated", unsafeBitCast(activated, to: UnsafeRawPointer.self), context)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> LibraryView? {
        context.map { Unmanaged<LibraryView>.fromOpaque($0).takeUnretainedValue() }
    }

    func setQuery(_ query: String) {
        applying = true
        defer { applying = false }
        gtk_editable_set_text(OpaquePointer(search), query)
    }

    /// One row per title, replacing the rows shown.
    func show(_ titles: [String]) {
        for row in rows { gtk_list_box_remove(OpaquePointer(list), row) }
        rows = titles.map { title in
            let label = gtk_label_new(title)!
            gtk_label_set_xalign(OpaquePointer(label), 0)
            gtk_widget_set_margin_start(label, 12)
            gtk_widget_set_margin_top(label, 8)
            gtk_widget_set_margin_bottom(label, 8)
            gtk_list_box_append(OpaquePointer(list), label)
            return gtk_widget_get_parent(label)!  // the row GtkListBox made around it
        }
    }

    /// Where each row is in the window, in window pixels (the header bar included).
    func rowFrames() -> [(x: Int, y: Int, width: Int, height: Int)] {
        let root = UnsafeMutableRawPointer(window).assumingMemoryBound(to: GtkWidget.self)
        return rows.map { row in
            var bounds = graphene_rect_t()
            guard gtk_widget_compute_bounds(row, root, &bounds) != 0 else { return (0, 0, 0, 0) }
            return (Int(bounds.origin.x), Int(bounds.origin.y), Int(bounds.size.width), Int(bounds.size.height))
        }
    }
}
