import CGtk
import SceneWorker

/// A note's editor in its scene's window: a GtkTextView in a scrolled window. GTK does the
/// typing, selection, clipboard, undo and input methods; the editor tells the scene what the
/// user changed and shows what the model changed (another window's typing, a command).
@MainActor
final class NoteEditor {
    private let window: UnsafeMutablePointer<GtkWindow>
    private let view: UnsafeMutablePointer<GtkWidget>
    private let buffer: UnsafeMutablePointer<GtkTextBuffer>
    private let scroll: UnsafeMutablePointer<GtkAdjustment>
    /// A scroll offset to put back once the text is laid out tall enough to have it.
    private var pendingScroll: Double?
    /// The user changed the text: the whole text and the cursor (a character offset).
    var onEdit: ((String, Int) -> Void)?
    /// The user moved the cursor without changing the text.
    var onCursorMoved: ((Int) -> Void)?
    /// Set while the model's text goes in: those changes are not the user's.
    private var applying = false

    init(in window: UnsafeMutablePointer<GtkWindow>) {
        self.window = window
        view = gtk_text_view_new()
        let textView = UnsafeMutableRawPointer(view).assumingMemoryBound(to: GtkTextView.self)
        buffer = gtk_text_view_get_buffer(textView)
        gtk_text_view_set_wrap_mode(textView, GTK_WRAP_WORD_CHAR)
        gtk_text_view_set_left_margin(textView, 12)
        gtk_text_view_set_right_margin(textView, 12)
        gtk_text_view_set_top_margin(textView, 12)
        gtk_text_view_set_bottom_margin(textView, 12)
        let scrolled = gtk_scrolled_window_new()
        gtk_scrolled_window_set_child(OpaquePointer(scrolled), view)
        scroll = gtk_scrolled_window_get_vadjustment(OpaquePointer(scrolled))!
        gtk_window_set_child(window, scrolled)
        gtk_window_set_focus(window, view)
        let context = Unmanaged.passUnretained(self).toOpaque()
        typealias Changed = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let changed: Changed = { _, context in
            MainActor.assumeIsolated { NoteEditor.from(context)?.bufferChanged() }
        }
        _ = wb_signal_connect(buffer, "changed", unsafeBitCast(changed, to: UnsafeRawPointer.self), context)
        typealias Notify = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let moved: Notify = { _, _, context in
            MainActor.assumeIsolated { NoteEditor.from(context)?.cursorMoved() }
        }
        _ = wb_signal_connect(buffer, "notify::cursor-position", unsafeBitCast(moved, to: UnsafeRawPointer.self), context)
        let laidOut: Changed = { _, context in
            MainActor.assumeIsolated { NoteEditor.from(context)?.applyPendingScroll() }
        }
        _ = wb_signal_connect(UnsafeMutableRawPointer(scroll), "changed", unsafeBitCast(laidOut, to: UnsafeRawPointer.self), context)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> NoteEditor? {
        context.map { Unmanaged<NoteEditor>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The buffer's text.
    var text: String {
        var start = GtkTextIter(), end = GtkTextIter()
        gtk_text_buffer_get_bounds(buffer, &start, &end)
        guard let bytes = gtk_text_buffer_get_text(buffer, &start, &end, 0) else { return "" }
        defer { g_free(bytes) }
        return String(cString: bytes)
    }

    /// The cursor as a character offset into `text`, the buffer's text (GTK counts Unicode
    /// scalars; the note, characters).
    private func cursor(in text: String) -> Int {
        var iter = GtkTextIter()
        gtk_text_buffer_get_iter_at_mark(buffer, &iter, gtk_text_buffer_get_insert(buffer))
        return characters(in: text, scalars: Int(gtk_text_iter_get_offset(&iter)))
    }

    /// What the editor shows besides the text, as interaction state: the selection (character
    /// offsets, equal at a bare cursor), how far the text is scrolled (pixels), and whether the
    /// text has the window's keyboard focus.
    struct View: Codable, Equatable {
        var selection: [Int]
        var scroll: Double
        var focused: Bool
    }

    var viewState: View {
        var start = GtkTextIter(), end = GtkTextIter()
        gtk_text_buffer_get_selection_bounds(buffer, &start, &end)
        let text = self.text
        return View(selection: [characters(in: text, scalars: Int(gtk_text_iter_get_offset(&start))),
                                characters(in: text, scalars: Int(gtk_text_iter_get_offset(&end)))],
                    scroll: pendingScroll ?? gtk_adjustment_get_value(scroll),
                    focused: gtk_window_get_focus(window) == view)
    }

    /// Puts a view back: the selection at once, the scroll once the text is laid out.
    func restore(_ state: View) {
        applying = true
        defer { applying = false }
        let text = self.text
        if state.selection.count == 2 {
            var bound = GtkTextIter(), insert = GtkTextIter()
            gtk_text_buffer_get_iter_at_offset(buffer, &bound, Int32(scalars(in: text, characters: state.selection[0])))
            gtk_text_buffer_get_iter_at_offset(buffer, &insert, Int32(scalars(in: text, characters: state.selection[1])))
            gtk_text_buffer_select_range(buffer, &insert, &bound)
        }
        gtk_window_set_focus(window, state.focused ? view : nil)
        pendingScroll = state.scroll
        applyPendingScroll()
    }

    private func applyPendingScroll() {
        guard let wanted = pendingScroll else { return }
        let reachable = gtk_adjustment_get_upper(scroll) - gtk_adjustment_get_page_size(scroll)
        guard reachable >= wanted else { return }
        pendingScroll = nil
        gtk_adjustment_set_value(scroll, wanted)
    }

    private func characters(in text: String, scalars: Int) -> Int {
        var prefix = String.UnicodeScalarView()
        prefix.append(contentsOf: text.unicodeScalars.prefix(scalars))
        return String(prefix).count
    }

    private func scalars(in text: String, characters: Int) -> Int {
        text.prefix(max(0, min(characters, text.count))).unicodeScalars.count
    }

    /// Shows the model's text and cursor; a no-op when the editor already shows them.
    func show(text newText: String, cursor newCursor: Int) {
        applying = true
        defer { applying = false }
        if text != newText { gtk_text_buffer_set_text(buffer, newText, -1) }
        if cursor(in: newText) != newCursor {
            var iter = GtkTextIter()
            gtk_text_buffer_get_iter_at_offset(buffer, &iter, Int32(scalars(in: newText, characters: newCursor)))
            gtk_text_buffer_place_cursor(buffer, &iter)
        }
    }

    private func bufferChanged() {
        guard !applying else { return }
        let text = self.text
        onEdit?(text, cursor(in: text))
    }

    private func cursorMoved() {
        guard !applying else { return }
        onCursorMoved?(cursor(in: text))
    }
}
