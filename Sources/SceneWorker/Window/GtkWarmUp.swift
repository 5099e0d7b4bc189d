import CGtk

/// What a prewarmed process with a display does once while it waits in its pool: GTK lays out
/// a window like a scene's (a header bar with a title, a text view with a line of text) without
/// showing it. That loads what a first frame otherwise waits for: the theme's style sheet
/// applied to each kind of widget, the fonts (fontconfig's configuration, the faces, their
/// glyph metrics) and the text layout machinery. GTK cannot be initialised before a fork, so a
/// zygote's scenes pay this in their own first frame; a prewarmed one has it done.
@MainActor
enum GtkWarmUp {
    static func run() {
        guard GtkMainLoop.isRunning else { return }
        let window = UnsafeMutableRawPointer(gtk_window_new()).assumingMemoryBound(to: GtkWindow.self)
        let header = gtk_header_bar_new()
        gtk_window_set_titlebar(window, header)
        gtk_window_set_title(window, "Aa")
        let view = gtk_text_view_new()!
        gtk_text_buffer_set_text(gtk_text_view_get_buffer(UnsafeMutableRawPointer(view).assumingMemoryBound(to: GtkTextView.self)),
                                 "The quick brown fox jumps over the lazy dog", -1)
        let scrolled = gtk_scrolled_window_new()
        gtk_scrolled_window_set_child(OpaquePointer(scrolled), view)
        gtk_window_set_child(window, scrolled)
        let widget = UnsafeMutableRawPointer(window).assumingMemoryBound(to: GtkWidget.self)
        var minimum: Int32 = 0, natural: Int32 = 0
        gtk_widget_measure(widget, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, &natural, nil, nil)
        gtk_widget_measure(widget, GTK_ORIENTATION_VERTICAL, natural, &minimum, &natural, nil, nil)
        gtk_window_destroy(window)
    }
}
