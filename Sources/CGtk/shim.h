// GTK 4 for scene apps and the SDK: the C API as it is, plus the few GLib macros Swift cannot
// import (signal connection, type checks), as functions. Nothing here wraps GTK any further.
#ifndef WB_CGTK_SHIM_H
#define WB_CGTK_SHIM_H

#include <gtk/gtk.h>
#include <glib-unix.h>
#ifdef GDK_WINDOWING_WAYLAND
#include <gdk/wayland/gdkwayland.h>
#endif

/// g_signal_connect: `handler` is any C function of the signal's signature.
static inline gulong wb_signal_connect(gpointer instance, const char *signal, const void *handler, gpointer data) {
    return g_signal_connect_data(instance, signal, (GCallback)handler, data, NULL, (GConnectFlags)0);
}

/// Whether the default display is a Wayland one (GDK_IS_WAYLAND_DISPLAY).
static inline int wb_display_is_wayland(GdkDisplay *display) {
#ifdef GDK_WINDOWING_WAYLAND
    return display && GDK_IS_WAYLAND_DISPLAY(display);
#else
    return 0;
#endif
}

/// Whether `widget` is a text widget that owns the editing keys (copy, paste, select all).
static inline int wb_widget_edits_text(GtkWidget *widget) {
    return widget && (GTK_IS_TEXT_VIEW(widget) || GTK_IS_EDITABLE(widget) || GTK_IS_TEXT(widget));
}

#endif
