// What the system UI's surfaces are made of: the keyboard (a keymap and its
// state, keys named as shortcuts name them), shared-memory buffers, text layouts and thumbnails.
// Internal to this module.
#ifndef WAYLAND_COMMON_H
#define WAYLAND_COMMON_H

#include <pango/pangocairo.h>
#include <stddef.h>
#include <stdint.h>
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>

struct sw_keys {
    struct xkb_context *context;
    struct xkb_keymap *keymap;
    struct xkb_state *state;
};

void sw_keys_init(struct sw_keys *keys);
void sw_keys_free(struct sw_keys *keys);
/// wl_keyboard.keymap: replaces the keymap (a virtual keyboard brings its own each time).
void sw_keys_keymap(struct sw_keys *keys, uint32_t format, int32_t fd, uint32_t size);
/// wl_keyboard.modifiers.
void sw_keys_modifiers(struct sw_keys *keys, uint32_t depressed, uint32_t latched, uint32_t locked, uint32_t group);
/// The SW_MOD_* bits held now.
uint32_t sw_keys_held(const struct sw_keys *keys);
/// A pressed evdev key: its xkb name at the base level in lower case, and what it types.
/// 0 when there is no keymap or the key has no symbol.
int sw_keys_describe(const struct sw_keys *keys, uint32_t key, char name[64], char text[64]);

/// What a surface hears from its seat; the callbacks of system_surface.h have these signatures. Any may be NULL.
struct sw_input_callbacks {
    void *context;
    /// A key went down: its name at the base level, the SW_MOD_* bits held, what it types.
    void (*key)(void *context, const char *name, uint32_t modifiers, const char *text);
    /// SW_POINTER_DOWN, UP or MOVED at (x, y) in surface pixels; the evdev button (0 for a move).
    void (*pointer)(void *context, int32_t kind, double x, double y, uint32_t button);
};

/// A seat's keyboard and pointer, taken and dropped as the seat's capabilities change (a
/// virtual keyboard such as wtype's comes and goes).
struct sw_input {
    struct wl_seat *seat;
    struct wl_keyboard *keyboard;
    struct wl_pointer *pointer;
    struct sw_keys keys;
    double pointer_x, pointer_y;
    struct sw_input_callbacks callbacks;
};

void sw_input_init(struct sw_input *input, struct sw_input_callbacks callbacks);
/// Binds the seat the registry announced, unless one is bound already (from registry.global).
void sw_input_bind(struct sw_input *input, struct wl_registry *registry, uint32_t name, uint32_t version);
void sw_input_free(struct sw_input *input);

/// A wl_shm buffer a surface keeps from frame to frame, mapped for as long as it is kept. A
/// new buffer's pages are allocated as a frame first writes them, about 4 µs a page here:
/// 2-4 ms of painting a 640x480 frame and 3.5-9 ms of a 1276x693 one went to that, against
/// 0.7 ms to paint the larger one into pages already there.
struct sw_kept_buffer {
    struct wl_buffer *buffer;
    void *pixels;
    size_t size;
    int32_t width, height;
    int busy;  // attached to the surface and not released by the compositor yet
};

/// The ARGB pixels one frame is drawn into, and the buffer that shows them.
struct sw_frame_buffer {
    struct wl_buffer *buffer;
    void *pixels;
    size_t size;
    int kept;  // one of the kept buffers; else a buffer for this frame alone
};

/// Begins a frame of width x height in one of the kept buffers, or, when every one is with
/// the compositor, in a buffer of its own that destroys itself once released. 0 when no
/// buffer can be made.
int sw_frame_buffer_begin(struct sw_kept_buffer *buffers, int count, struct wl_shm *shm, int32_t width, int32_t height,
                          struct sw_frame_buffer *frame);
/// Ends drawing into the frame's pixels (a buffer of its own is unmapped; the compositor
/// still reads it).
void sw_frame_buffer_end(struct sw_frame_buffer *frame);
/// Destroys the kept buffers and unmaps them.
void sw_kept_buffers_free(struct sw_kept_buffer *buffers, int count);

/// A wrapped layout of `text` in `font` (a Pango description), `width` pixels wide.
PangoLayout *sw_text_layout(cairo_t *cr, const char *font, const char *text, int width);
/// Loads the fonts into a font map of their own (once; a second caller waits for the first).
void sw_prepare_fonts(void);
/// The calling thread lays out text with the prepared font map, unless another thread took it.
void sw_use_prepared_fonts(void);

/// `picture` (`width` x `height`) fitted into SW_THUMBNAIL_WIDTH x SW_THUMBNAIL_HEIGHT, a new
/// reference (the picture itself when it fits already): a scene's thumbnail, and a switcher
/// card's picture when the store kept no thumbnail.
cairo_surface_t *sw_thumbnail_of(cairo_surface_t *picture, int width, int height);

#endif
