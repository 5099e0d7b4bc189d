// The GTK 4 limit for "open -> first frame" and for a scene's memory: the smallest GTK program
// that maps one window (a header bar and an empty text view, as a notes editor has) and then
// waits to be killed. The benchmark times its spawn to the compositor's "new window" event and
// reads its private memory once it is idle, with the renderer the scenes use (GSK_RENDERER).
#include <gtk/gtk.h>

int main(void) {
    g_set_prgname("first-gtk-window");
    gtk_init();
    GtkWidget *window = gtk_window_new();
    gtk_window_set_title(GTK_WINDOW(window), "First GTK window");
    gtk_window_set_titlebar(GTK_WINDOW(window), gtk_header_bar_new());
    GtkWidget *scrolled = gtk_scrolled_window_new();
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scrolled), gtk_text_view_new());
    gtk_window_set_child(GTK_WINDOW(window), scrolled);
    gtk_window_set_default_size(GTK_WINDOW(window), 640, 480);
    gtk_window_present(GTK_WINDOW(window));
    g_main_loop_run(g_main_loop_new(NULL, FALSE));
    return 0;
}
