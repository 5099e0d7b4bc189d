import CGtk
import SceneWorker

/// A note's editor in its scene's window: a GtkTextView in a scrolled window. GTK does the
/// typing, selection, clipboard, undo and input methods; the editor tells the scene what the
/// user changed and shows what the model changed (another window's typing, a command).
@MainActor
final class NoteEditor {
    private let view: UnsafeMutablePointer<GtkWidget>
    private let buffer: UnsafeMutablePointer<GtkTextBuffer>
    /// The user changed the text: the whole text and the cursor (a character offset).
    var onEdit: ((String, Int) -> Void)?
    /// The user moved the cursor without changing the text.
    var onCursorMoved: ((Int) -> Void)?
    /// Set while the model's text goes in: those changes are not the user's.
    private var applying = false

    init(in window: UnsafeMutablePointer<GtkWindow>) {
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

    /// The cursor as a character offset into `text` (GTK counts Unicode scalars; the note, characters).
    var cursor: Int {
        var iter = GtkTextIter()
        gtk_text_buffer_get_iter_at_mark(buffer, &iter, gtk_text_buffer_get_insert(buffer))
        let scalars = Int(gtk_text_iter_get_offset(&iter))
        var prefix = String.UnicodeScalarView()
        prefix.append(contentsOf: text.unicodeScalars.prefix(scalars))
        return String(prefix).count
    }

    /// Shows the model's text and cursor; a no-op when the editor already shows them.
    func show(text newText: String, cursor newCursor: Int) {
        applying = true
        defer { applying = false }
        if text != newText { gtk_text_buffer_set_text(buffer, newText, -1) }
        if cursor != newCursor {
            var iter = GtkTextIter()
            let scalars = newText.prefix(max(0, min(newCursor, newText.count))).unicodeScalars.count
            gtk_text_buffer_get_iter_at_offset(buffer, &iter, Int32(scalars))
            gtk_text_buffer_place_cursor(buffer, &iter)
        }
    }

    private func bufferChanged() {
        guard !applying else { return }
        onEdit?(text, cursor)
    }

    private func cursorMoved() {
        guard !applying else { return }
        onCursorMoved?(cursor)
    }

}
