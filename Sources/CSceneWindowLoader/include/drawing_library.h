// The drawing library (libwindowbroker-drawing.so: the system UI's surfaces, with
// libwayland-client, xkbcommon, cairo and pango) is loaded when the system UI first needs it,
// not when it starts: the process the broker keeps ready loads it on a thread of its own while
// it waits. (Scenes draw with GTK and never load it.)
//
// The functions of system_surface.h that a program calls are forwarders, defined in this
// target; they call the library through the table below.
#ifndef DRAWING_LIBRARY_H
#define DRAWING_LIBRARY_H

#include "system_surface.h"

/// The library's file name: beside the executable (a build directory, PREFIX/libexec/windowbroker)
/// unless WINDOWBROKER_DRAWING_LIBRARY names the file (the broker sets it for the apps it starts).
#define WB_DRAWING_LIBRARY_FILE "libwindowbroker-drawing.so"
/// The one symbol the library exports: `const wb_drawing_table *WB_DRAWING_TABLE_SYMBOL(void)`.
#define WB_DRAWING_TABLE_SYMBOL wb_drawing_table_v4

/// What the library exports; a field is added at the end only, and the symbol's version is
/// bumped with each change, so that a program never reads past the table of an older library.
typedef struct {
    ss_surface *(*ss_open)(const char *name_space, int32_t keyboard, ss_callbacks callbacks, char *error, int error_size);
    int (*ss_fd)(ss_surface *surface);
    int (*ss_dispatch)(ss_surface *surface);
    void (*ss_close)(ss_surface *surface);
    ss_picture *(*ss_picture_from_png)(const uint8_t *bytes, size_t length);
    void (*ss_picture_free)(ss_picture *picture);
    void (*ss_draw_cards)(ss_surface *surface, const char *heading, const char *hint, const ss_card *cards, int32_t count, int32_t selected);
    int32_t (*ss_item_at)(ss_surface *surface, double x, double y);
    int32_t (*ss_item_frame)(ss_surface *surface, int32_t index, int32_t frame[4]);
    void (*ss_draw_rows)(ss_surface *surface, const char *heading, const ss_row *rows, int32_t count, int32_t selected);
    /// Loads the fonts (fontconfig's configuration, the faces) into a font map that the first
    /// thread to draw text then uses; the preloading thread calls it.
    void (*sw_prepare_fonts)(void);
} wb_drawing_table;

/// Loads the library (once; later calls return at once): 1 when it is loaded, else 0 with the
/// reason in `error` (when given): where it was looked for and what the loader said.
int wb_drawing_load(char *error, int error_size);

/// Starts loading the library, and then the fonts, on a thread of its own and returns: a
/// process that will draw (it has a display) calls this first thing, so that the loading
/// overlaps its other start-up. Once a process: later calls return at once.
void wb_drawing_preload(void);

#endif
