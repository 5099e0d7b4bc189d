// A surface of the system UI (the switcher, the command overlay) on a Wayland compositor: with
// wlroots' layer shell above the windows, else a full-screen window; over the whole output,
// drawn with cairo and pango
// into wl_shm buffers. One connection per surface; every call on one thread; events are read
// when `ss_fd` is readable, by `ss_dispatch`.
#ifndef SYSTEM_SURFACE_H
#define SYSTEM_SURFACE_H

#include <stddef.h>
#include <stdint.h>

// Not exported from the program or the drawing library that defines these (each is linked
// into one of them; the library exports only its table, drawing_library.h), so that neither
// binds the other's definitions when the library is loaded.
#pragma GCC visibility push(hidden)

typedef struct ss_surface ss_surface;

enum { SW_POINTER_DOWN = 0, SW_POINTER_UP = 1, SW_POINTER_MOVED = 2 };
enum { SW_MOD_CTRL = 1, SW_MOD_ALT = 2, SW_MOD_SHIFT = 4, SW_MOD_SUPER = 8 };

/// The box a card's picture is fitted into (a session's thumbnail, made by its scene).
#define SW_THUMBNAIL_WIDTH 244
#define SW_THUMBNAIL_HEIGHT 154

/// A decoded picture (a session's snapshot), drawn scaled into cards.
typedef struct ss_picture ss_picture;

typedef struct {
    void *context;
    /// The compositor gave the surface its size: draw (the surface shows nothing until then).
    void (*configure)(void *context, int32_t width, int32_t height);
    /// The compositor will not show the surface any more (its output went away, it was dismissed).
    void (*closed)(void *context);
    /// A key went down (the surface has the keyboard only when opened with `keyboard` 1): its
    /// xkb name at the base level in lower case (`u`, `return`, `left`), the SW_MOD_* bits
    /// held, and what it types with them (UTF-8, "" for none).
    void (*key)(void *context, const char *name, uint32_t modifiers, const char *text);
    /// The pointer pressed, released or moved (SW_POINTER_* kinds, surface pixels, evdev button).
    void (*pointer)(void *context, int32_t kind, double x, double y, uint32_t button);
    /// Frame number `frame` (1 for the first) is on screen: the compositor asked for the next.
    void (*presented)(void *context, uint32_t frame);
} ss_callbacks;

/// Connects to the compositor (`WAYLAND_DISPLAY`) and asks for a layer surface over the whole
/// output on the overlay layer, under `name_space` ("windowbroker-switcher"). `keyboard` 1:
/// it takes the keyboard while shown (exclusive); 0: keys stay with the focused window. Without
/// the layer shell, a full-screen xdg toplevel with `name_space` as its app id and title, which
/// has the keyboard as any new window does. NULL (with a reason in `error`) without a
/// compositor or a shell.
ss_surface *ss_open(const char *name_space, int32_t keyboard, ss_callbacks callbacks, char *error, int error_size);

int ss_fd(ss_surface *surface);
/// Reads and handles pending events and flushes requests; -1 when the connection is gone.
int ss_dispatch(ss_surface *surface);
void ss_close(ss_surface *surface);

/// A picture of PNG bytes (copied; NULL when they are not a PNG). It is decoded and scaled to
/// its card the first time a card shows it, the cards on screen in parallel.
ss_picture *ss_picture_from_png(const uint8_t *bytes, size_t length);
void ss_picture_free(ss_picture *picture);

enum { SS_CARD_SESSION = 0, SS_CARD_NEW_WINDOW = 1 };

/// One card of the switcher: a session (its picture, title and a line of detail) or the card
/// that opens a new window.
typedef struct {
    int32_t kind;
    const char *title;
    const char *detail;
    const ss_picture *picture;  // NULL: the session has no snapshot
} ss_card;

/// Draws the switcher: `heading` and `hint` above a grid of cards, `selected` outlined and
/// scrolled into view. Before the first configure it does nothing.
void ss_draw_cards(ss_surface *surface, const char *heading, const char *hint, const ss_card *cards, int32_t count, int32_t selected);
/// The item (a card, or a command row; never a group's title) under (x, y) in the last
/// frame, -1 for none.
int32_t ss_item_at(ss_surface *surface, double x, double y);
/// Where item `index` was drawn in the last frame: 1 and its rectangle when it was drawn.
int32_t ss_item_frame(ss_surface *surface, int32_t index, int32_t frame[4]);

/// One line of the command overlay: a group's title (`shortcut` NULL, not choosable) or a
/// command with its shortcut ("" for none).
typedef struct {
    const char *title;
    const char *shortcut;
} ss_row;

/// Draws the command overlay: a panel with `heading` and the rows in columns, `selected`
/// highlighted (-1: none).
void ss_draw_rows(ss_surface *surface, const char *heading, const ss_row *rows, int32_t count, int32_t selected);

/// The colours the switcher paints with (0xRRGGBB): its background and a card's, for tests
/// that read its pixels.
enum { SS_BACKGROUND_RGB = 0x1c1e23, SS_CARD_RGB = 0x3a3d45, SS_SELECTION_RGB = 0x4f9cf9 };

#pragma GCC visibility pop

#endif
