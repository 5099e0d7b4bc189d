// See wayland_common.h.
#define _GNU_SOURCE
#include "wayland_common.h"
#include "system_surface.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void sw_keys_init(struct sw_keys *keys) {
    keys->context = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
    keys->keymap = NULL;
    keys->state = NULL;
}

static void drop_keymap(struct sw_keys *keys) {
    if (keys->state) xkb_state_unref(keys->state);
    if (keys->keymap) xkb_keymap_unref(keys->keymap);
    keys->state = NULL;
    keys->keymap = NULL;
}

void sw_keys_free(struct sw_keys *keys) {
    drop_keymap(keys);
    if (keys->context) xkb_context_unref(keys->context);
    keys->context = NULL;
}

void sw_keys_keymap(struct sw_keys *keys, uint32_t format, int32_t fd, uint32_t size) {
    if (format != WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1 || !keys->context) {
        close(fd);
        return;
    }
    char *text = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (text == MAP_FAILED) return;
    struct xkb_keymap *keymap = xkb_keymap_new_from_string(keys->context, text, XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
    munmap(text, size);
    if (!keymap) return;
    drop_keymap(keys);
    keys->keymap = keymap;
    keys->state = xkb_state_new(keymap);
}

void sw_keys_modifiers(struct sw_keys *keys, uint32_t depressed, uint32_t latched, uint32_t locked, uint32_t group) {
    if (keys->state) xkb_state_update_mask(keys->state, depressed, latched, locked, 0, 0, group);
}

uint32_t sw_keys_held(const struct sw_keys *keys) {
    struct xkb_state *state = keys->state;
    if (!state) return 0;
    uint32_t held = 0;
    if (xkb_state_mod_name_is_active(state, XKB_MOD_NAME_CTRL, XKB_STATE_MODS_EFFECTIVE) > 0) held |= SW_MOD_CTRL;
    if (xkb_state_mod_name_is_active(state, XKB_MOD_NAME_ALT, XKB_STATE_MODS_EFFECTIVE) > 0) held |= SW_MOD_ALT;
    if (xkb_state_mod_name_is_active(state, XKB_MOD_NAME_SHIFT, XKB_STATE_MODS_EFFECTIVE) > 0) held |= SW_MOD_SHIFT;
    if (xkb_state_mod_name_is_active(state, XKB_MOD_NAME_LOGO, XKB_STATE_MODS_EFFECTIVE) > 0) held |= SW_MOD_SUPER;
    return held;
}

int sw_keys_describe(const struct sw_keys *keys, uint32_t key, char name[64], char text[64]) {
    if (!keys->state) return 0;
    xkb_keycode_t code = key + 8;  // evdev to xkb
    // The key's name at its base level: ctrl+shift+u is named u, not U.
    const xkb_keysym_t *syms;
    xkb_layout_index_t layout = xkb_state_key_get_layout(keys->state, code);
    int count = xkb_keymap_key_get_syms_by_level(keys->keymap, code, layout == XKB_LAYOUT_INVALID ? 0 : layout, 0, &syms);
    if (count <= 0) return 0;
    if (xkb_keysym_get_name(syms[0], name, 64) <= 0) return 0;
    for (char *c = name; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (xkb_state_key_get_utf8(keys->state, code, text, 64) < 0) text[0] = 0;
    return 1;
}

// ---------------------------------------------------------------- the seat

static void keyboard_keymap(void *data, struct wl_keyboard *keyboard, uint32_t format, int32_t fd, uint32_t size) {
    struct sw_input *input = data;
    sw_keys_keymap(&input->keys, format, fd, size);
}

static void keyboard_enter(void *data, struct wl_keyboard *keyboard, uint32_t serial, struct wl_surface *surface, struct wl_array *keys) {}

static void keyboard_leave(void *data, struct wl_keyboard *keyboard, uint32_t serial, struct wl_surface *surface) {}

static void keyboard_key(void *data, struct wl_keyboard *keyboard, uint32_t serial, uint32_t time, uint32_t key, uint32_t state) {
    struct sw_input *input = data;
    if (state != WL_KEYBOARD_KEY_STATE_PRESSED || !input->callbacks.key) return;
    char name[64], text[64];
    if (!sw_keys_describe(&input->keys, key, name, text)) return;
    input->callbacks.key(input->callbacks.context, name, sw_keys_held(&input->keys), text);
}

static void keyboard_modifiers(void *data, struct wl_keyboard *keyboard, uint32_t serial, uint32_t depressed, uint32_t latched, uint32_t locked, uint32_t group) {
    struct sw_input *input = data;
    sw_keys_modifiers(&input->keys, depressed, latched, locked, group);
}

static void keyboard_repeat_info(void *data, struct wl_keyboard *keyboard, int32_t rate, int32_t delay) {}

static const struct wl_keyboard_listener keyboard_listener = {
    keyboard_keymap, keyboard_enter, keyboard_leave, keyboard_key, keyboard_modifiers, keyboard_repeat_info,
};

static void pointer_enter(void *data, struct wl_pointer *pointer, uint32_t serial, struct wl_surface *surface, wl_fixed_t x, wl_fixed_t y) {
    struct sw_input *input = data;
    input->pointer_x = wl_fixed_to_double(x);
    input->pointer_y = wl_fixed_to_double(y);
}

static void pointer_leave(void *data, struct wl_pointer *pointer, uint32_t serial, struct wl_surface *surface) {}

static void pointer_motion(void *data, struct wl_pointer *pointer, uint32_t time, wl_fixed_t x, wl_fixed_t y) {
    struct sw_input *input = data;
    input->pointer_x = wl_fixed_to_double(x);
    input->pointer_y = wl_fixed_to_double(y);
    if (input->callbacks.pointer) input->callbacks.pointer(input->callbacks.context, SW_POINTER_MOVED, input->pointer_x, input->pointer_y, 0);
}

static void pointer_button(void *data, struct wl_pointer *pointer, uint32_t serial, uint32_t time, uint32_t button, uint32_t state) {
    struct sw_input *input = data;
    int down = state == WL_POINTER_BUTTON_STATE_PRESSED;
    if (input->callbacks.pointer) {
        input->callbacks.pointer(input->callbacks.context, down ? SW_POINTER_DOWN : SW_POINTER_UP, input->pointer_x, input->pointer_y, button);
    }
}

static void pointer_axis(void *data, struct wl_pointer *pointer, uint32_t time, uint32_t axis, wl_fixed_t value) {}
static void pointer_frame(void *data, struct wl_pointer *pointer) {}
static void pointer_axis_source(void *data, struct wl_pointer *pointer, uint32_t source) {}
static void pointer_axis_stop(void *data, struct wl_pointer *pointer, uint32_t time, uint32_t axis) {}
static void pointer_axis_discrete(void *data, struct wl_pointer *pointer, uint32_t axis, int32_t discrete) {}

static const struct wl_pointer_listener pointer_listener = {
    pointer_enter, pointer_leave, pointer_motion, pointer_button, pointer_axis,
    pointer_frame, pointer_axis_source, pointer_axis_stop, pointer_axis_discrete,
};

static void seat_capabilities(void *data, struct wl_seat *seat, uint32_t capabilities) {
    struct sw_input *input = data;
    int has_pointer = (capabilities & WL_SEAT_CAPABILITY_POINTER) != 0;
    if (has_pointer && !input->pointer) {
        input->pointer = wl_seat_get_pointer(seat);
        wl_pointer_add_listener(input->pointer, &pointer_listener, input);
    } else if (!has_pointer && input->pointer) {
        wl_pointer_destroy(input->pointer);
        input->pointer = NULL;
    }
    int has_keyboard = (capabilities & WL_SEAT_CAPABILITY_KEYBOARD) != 0;
    if (has_keyboard && !input->keyboard) {
        input->keyboard = wl_seat_get_keyboard(seat);
        wl_keyboard_add_listener(input->keyboard, &keyboard_listener, input);
    } else if (!has_keyboard && input->keyboard) {
        wl_keyboard_destroy(input->keyboard);
        input->keyboard = NULL;
    }
}

static void seat_name(void *data, struct wl_seat *seat, const char *name) {}

static const struct wl_seat_listener seat_listener = { seat_capabilities, seat_name };

void sw_input_init(struct sw_input *input, struct sw_input_callbacks callbacks) {
    memset(input, 0, sizeof *input);
    sw_keys_init(&input->keys);
    input->callbacks = callbacks;
}

void sw_input_bind(struct sw_input *input, struct wl_registry *registry, uint32_t name, uint32_t version) {
    if (input->seat) return;
    input->seat = wl_registry_bind(registry, name, &wl_seat_interface, version < 5 ? version : 5);
    wl_seat_add_listener(input->seat, &seat_listener, input);
}

void sw_input_free(struct sw_input *input) {
    if (input->keyboard) wl_keyboard_destroy(input->keyboard);
    if (input->pointer) wl_pointer_destroy(input->pointer);
    if (input->seat) wl_seat_destroy(input->seat);
    input->keyboard = NULL;
    input->pointer = NULL;
    input->seat = NULL;
    sw_keys_free(&input->keys);
}

// ---------------------------------------------------------------- buffers and text

static void buffer_release(void *data, struct wl_buffer *buffer) {
    wl_buffer_destroy(buffer);
}

static const struct wl_buffer_listener buffer_listener = { buffer_release };

static struct wl_buffer *make_shm_buffer(struct wl_shm *shm, int32_t width, int32_t height, void **pixels, size_t *size) {
    int stride = width * 4;
    *size = (size_t)stride * (size_t)height;
    int fd = memfd_create("windowbroker-surface", MFD_CLOEXEC);
    if (fd < 0) return NULL;
    if (ftruncate(fd, (off_t)*size) < 0) {
        close(fd);
        return NULL;
    }
    *pixels = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (*pixels == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    struct wl_shm_pool *pool = wl_shm_create_pool(shm, fd, (int32_t)*size);
    struct wl_buffer *buffer = wl_shm_pool_create_buffer(pool, 0, width, height, stride, WL_SHM_FORMAT_ARGB8888);
    wl_shm_pool_destroy(pool);
    close(fd);
    return buffer;
}


static void kept_release(void *data, struct wl_buffer *buffer) {
    ((struct sw_kept_buffer *)data)->busy = 0;
}

static const struct wl_buffer_listener kept_listener = { kept_release };

static void kept_free(struct sw_kept_buffer *kept) {
    if (kept->buffer) wl_buffer_destroy(kept->buffer);
    if (kept->pixels) munmap(kept->pixels, kept->size);
    memset(kept, 0, sizeof *kept);
}

/// One of `count` kept buffers that is free and width x height, marked busy: made (or made
/// again at that size) when none is. NULL when every one is busy or one cannot be made.
static struct sw_kept_buffer *kept_buffer(struct sw_kept_buffer *buffers, int count, struct wl_shm *shm, int32_t width, int32_t height) {
    struct sw_kept_buffer *spare = NULL;
    for (int i = 0; i < count; i++) {
        struct sw_kept_buffer *kept = &buffers[i];
        if (kept->busy) continue;
        if (kept->buffer && kept->width == width && kept->height == height) {
            kept->busy = 1;
            return kept;
        }
        // An empty slot before one holding a buffer of another size.
        if (!spare || (spare->buffer && !kept->buffer)) spare = kept;
    }
    if (!spare) return NULL;
    kept_free(spare);
    void *pixels;
    size_t size;
    struct wl_buffer *buffer = make_shm_buffer(shm, width, height, &pixels, &size);
    if (!buffer) return NULL;
    *spare = (struct sw_kept_buffer){ buffer, pixels, size, width, height, 1 };
    wl_buffer_add_listener(buffer, &kept_listener, spare);
    return spare;
}

void sw_kept_buffers_free(struct sw_kept_buffer *buffers, int count) {
    for (int i = 0; i < count; i++) kept_free(&buffers[i]);
}

int sw_frame_buffer_begin(struct sw_kept_buffer *buffers, int count, struct wl_shm *shm, int32_t width, int32_t height,
                          struct sw_frame_buffer *frame) {
    struct sw_kept_buffer *kept = kept_buffer(buffers, count, shm, width, height);
    if (kept) {
        *frame = (struct sw_frame_buffer){ kept->buffer, kept->pixels, kept->size, 1 };
        return 1;
    }
    frame->kept = 0;
    frame->buffer = make_shm_buffer(shm, width, height, &frame->pixels, &frame->size);
    if (!frame->buffer) return 0;
    wl_buffer_add_listener(frame->buffer, &buffer_listener, NULL);
    return 1;
}

void sw_frame_buffer_end(struct sw_frame_buffer *frame) {
    if (!frame->kept) munmap(frame->pixels, frame->size);
}

// The first layout of a process loads fontconfig's configuration and the fonts: 10-20 ms here,
// against 1-3 ms for later frames. A scene with a display does it on the thread that loaded
// this library, while the system UI's process starts (drawing_library.h); the font
// map it warmed is then handed to the first thread that lays out text (Pango's default font
// map is per thread, and a font map must not be used by two threads at once).
static pthread_once_t fonts_once = PTHREAD_ONCE_INIT;
static PangoFontMap *warmed_font_map;
static atomic_flag warmed_font_map_taken = ATOMIC_FLAG_INIT;

/// `text` in `font` (a Pango description), wrapped at `width` pixels.
static void set_text(PangoLayout *layout, const char *font, const char *text, int width) {
    PangoFontDescription *description = pango_font_description_from_string(font);
    pango_layout_set_font_description(layout, description);
    pango_font_description_free(description);
    pango_layout_set_width(layout, width * PANGO_SCALE);
    pango_layout_set_wrap(layout, PANGO_WRAP_WORD_CHAR);
    pango_layout_set_text(layout, text ? text : "", -1);
}

static void warm_fonts(void) {
    PangoFontMap *map = pango_cairo_font_map_new();
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 64, 64);
    cairo_t *cr = cairo_create(surface);
    PangoContext *context = pango_font_map_create_context(map);
    pango_cairo_update_context(cr, context);
    // The faces the system UI draws with, for Latin text: the fallback faces of other scripts
    // would double the time (CJK: 10-11 against 6.3-7.8 ms here).
    static const char *const fonts[] = {"Sans 13", "Sans Bold 13"};
    for (size_t i = 0; i < sizeof fonts / sizeof fonts[0]; i++) {
        PangoLayout *layout = pango_layout_new(context);
        set_text(layout, fonts[i], "Ag", 64);
        pango_cairo_show_layout(cr, layout);
        g_object_unref(layout);
    }
    g_object_unref(context);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    warmed_font_map = map;
}

void sw_prepare_fonts(void) { pthread_once(&fonts_once, warm_fonts); }

void sw_use_prepared_fonts(void) {
    static __thread int done;
    if (done) return;
    done = 1;
    sw_prepare_fonts();
    if (!atomic_flag_test_and_set(&warmed_font_map_taken)) pango_cairo_font_map_set_default(PANGO_CAIRO_FONT_MAP(warmed_font_map));
}

PangoLayout *sw_text_layout(cairo_t *cr, const char *font, const char *text, int width) {
    sw_use_prepared_fonts();
    PangoLayout *layout = pango_cairo_create_layout(cr);
    set_text(layout, font, text, width);
    return layout;
}

// ---------------------------------------------------------------- pictures

/// `picture` (`width` x `height`) scaled to fit the thumbnail's box: halved (each pixel the mean
/// of four) until one more halving would go below the box, then scaled the rest of the way
/// bilinearly. A text's lines stay lines. Cairo's good filter at this scale (pixman's
/// convolution over the whole picture) was a quarter of the switcher's 18 ms a picture.
cairo_surface_t *sw_thumbnail_of(cairo_surface_t *picture, int width, int height) {
    double scale = (double)SW_THUMBNAIL_WIDTH / width < (double)SW_THUMBNAIL_HEIGHT / height
        ? (double)SW_THUMBNAIL_WIDTH / width : (double)SW_THUMBNAIL_HEIGHT / height;
    if (scale > 1) scale = 1;
    int target_width = (int)(width * scale + 0.5), target_height = (int)(height * scale + 0.5);
    if (target_width < 1) target_width = 1;
    if (target_height < 1) target_height = 1;
    cairo_surface_t *current = cairo_surface_reference(picture);
    int current_width = width, current_height = height;
    for (;;) {
        int halving = current_width / 2 >= target_width && current_height / 2 >= target_height;
        int next_width = halving ? (current_width + 1) / 2 : target_width;
        int next_height = halving ? (current_height + 1) / 2 : target_height;
        if (next_width == current_width && next_height == current_height) break;
        cairo_surface_t *next = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, next_width, next_height);
        cairo_t *cr = cairo_create(next);
        cairo_scale(cr, (double)next_width / current_width, (double)next_height / current_height);
        cairo_set_source_surface(cr, current, 0, 0);
        cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_BILINEAR);
        // Edge pixels are sampled from inside the picture, not faded into transparency.
        cairo_pattern_set_extend(cairo_get_source(cr), CAIRO_EXTEND_PAD);
        cairo_paint(cr);
        cairo_destroy(cr);
        cairo_surface_destroy(current);
        current = next;
        current_width = next_width;
        current_height = next_height;
        if (!halving) break;
    }
    return current;
}
