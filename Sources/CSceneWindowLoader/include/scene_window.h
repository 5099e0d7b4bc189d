// The window of one scene on a Wayland compositor: an xdg_toplevel with the app's id and the
// scene's title, drawn into wl_shm buffers with cairo and pango. One connection per window
// (a worker process has one scene). Every call happens on one thread (the SDK's main thread);
// events are read when `sw_fd` is readable, by `sw_dispatch`.
#ifndef SCENE_WINDOW_H
#define SCENE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

// Not exported from the program or the drawing library that defines these (each is linked
// into one of them; the library exports only its table, drawing_library.h), so that neither
// binds the other's definitions when the library is loaded.
#pragma GCC visibility push(hidden)

typedef struct sw_window sw_window;

typedef struct {
    void *context;
    /// The compositor gave the window a size (in surface pixels) and says whether it is the
    /// activated (keyboard-focused) one. Called before the window's first frame and at every change.
    void (*configure)(void *context, int32_t width, int32_t height, int32_t activated);
    /// The user asked to close the window (its title-bar button, the compositor's binding).
    void (*close)(void *context);
    /// A key went down while the window has the keyboard. `name`: the key's xkb name at its
    /// base level, in lower case (`u`, `return`, `backspace`, `left`, `bracketleft`);
    /// `modifiers`: the SW_MOD_* bits held; `text`: what it types with them (UTF-8, "" for none).
    void (*key)(void *context, const char *name, uint32_t modifiers, const char *text);
    /// The pointer pressed (SW_POINTER_DOWN), released (UP) or moved (MOVED) over the window,
    /// at (x, y) in surface pixels; `button` is the evdev code (BTN_LEFT 0x110; 0 for a move).
    void (*pointer)(void *context, int32_t kind, double x, double y, uint32_t button);
    /// Something a scene dragged (SW_DRAG_MIME: a serialised user activity) was dropped on this
    /// window at (x, y). Return 1 when the window took it.
    int32_t (*drop)(void *context, const uint8_t *data, int32_t length, double x, double y);
    /// A drag this window started is over: `dropped` 1 when a window took it, 0 when it was
    /// cancelled (dropped on no window, or on one that does not take it).
    void (*drag_ended)(void *context, int32_t dropped);
    /// The SW_MOD_* bits held changed while the window has the keyboard (a modifier went down
    /// or up; 0 when the window loses the keyboard).
    void (*modifiers)(void *context, uint32_t modifiers);
} sw_callbacks;

enum { SW_POINTER_DOWN = 0, SW_POINTER_UP = 1, SW_POINTER_MOVED = 2 };

/// The data type of what scenes drag: a user activity (the wire schema's UserActivity).
#define SW_DRAG_MIME "application/x-windowbroker-activity"

enum { SW_MOD_CTRL = 1, SW_MOD_ALT = 2, SW_MOD_SHIFT = 4, SW_MOD_SUPER = 8 };

/// Connects to the compositor (`WAYLAND_DISPLAY`) and maps a toplevel; NULL (with a reason in
/// `error`, when given) if there is no compositor or it lacks xdg-shell. It takes the
/// connection `sw_prepare` made when there is one that still works.
sw_window *sw_open(const char *app_id, const char *title, sw_callbacks callbacks, char *error, int error_size);

/// Connects to the compositor and binds its globals ahead of the first window (a scene's
/// preloading thread, a prewarmed scene while it waits in its pool), so that `sw_open` only
/// creates the toplevel and waits for its configure. Once a process; any thread. 1 when a
/// connection waits for the first window, else 0.
int sw_prepare(void);

/// The connection's descriptor: readable when events wait for `sw_dispatch`.
int sw_fd(sw_window *window);

/// Reads and handles pending events and flushes requests; -1 when the connection is gone.
int sw_dispatch(sw_window *window);

void sw_set_title(sw_window *window, const char *title);

/// Draws a frame and commits it: a heading, the text, and a cursor before the character at
/// `cursor` (a character offset; negative: none). Before the first configure it only records.
void sw_render(sw_window *window, const char *heading, const char *text, int32_t cursor);

/// The size of the last frame drawn (0 before the first).
int32_t sw_width(sw_window *window);
int32_t sw_height(sw_window *window);

/// Asks the compositor to focus the window (xdg-activation): with `token` (from whoever asked
/// for the scene, e.g. XDG_ACTIVATION_TOKEN) or, when it is NULL or empty, with a token the
/// window requests itself. 0 when the compositor has no xdg-activation.
int sw_activate(sw_window *window, const char *token);

/// Starts dragging `data` (of SW_DRAG_MIME) out of the window; only while a pointer button
/// is down (the press is the drag's serial). 0 when it cannot (no button down, no data device).
int sw_start_drag(sw_window *window, const uint8_t *data, int32_t length);

/// The byte offset into the text last drawn of the character at (x, y), -1 when (x, y) is
/// not over the text.
int32_t sw_text_index_at(sw_window *window, double x, double y);

/// The box a snapshot's thumbnail is fitted into: a card's picture in the switcher.
#define SW_THUMBNAIL_WIDTH 244
#define SW_THUMBNAIL_HEIGHT 154

/// A picture of a scene as its window draws it, at `width` x `height`, as PNG bytes (NULL when
/// it cannot be made), and in `thumbnail` (when not NULL) the same picture scaled to fit
/// SW_THUMBNAIL_WIDTH x SW_THUMBNAIL_HEIGHT (NULL when it cannot be made); free both with
/// `sw_free`. Needs no compositor.
unsigned char *sw_snapshot_png(int32_t width, int32_t height, const char *heading, const char *text, int32_t cursor, size_t *length,
                               unsigned char **thumbnail, size_t *thumbnail_length);

void sw_free(void *bytes);

/// Loads the fonts before the first window needs them, for the calling thread (the one that
/// draws; when the preloading thread is loading them, it waits), and the faces that other
/// scripts (CJK, symbols) fall back to.
void sw_warm_up(void);

/// Unmaps the window and closes the connection.
void sw_close(sw_window *window);

#pragma GCC visibility pop

#endif
