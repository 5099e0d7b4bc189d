// The system UI's surfaces (see include/system_surface.h): a layer surface over everything where
// the compositor has wlroots' layer shell, else a full-screen xdg toplevel (weston, GNOME). C
// because the Wayland protocol's requests are variadic and its listeners are structs of C
// function pointers.
#define _GNU_SOURCE
#include "system_surface.h"
#include "wayland_common.h"
#include "wlr-layer-shell-unstable-v1-client-protocol.h"
#include "xdg-shell-client-protocol.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

enum {
    CARD_WIDTH = 260, PICTURE_HEIGHT = 162, CARD_TEXT_HEIGHT = 54, GAP = 28, PAGE_MARGIN = 40,
    HEADING_BAND = 96, ROW_HEIGHT = 30, COLUMN_WIDTH = 300, PANEL_PADDING = 28,
};

struct rect { double x, y, w, h; };

struct ss_surface {
    struct wl_display *display;
    struct wl_registry *registry;
    struct wl_compositor *compositor;
    struct wl_shm *shm;
    struct zwlr_layer_shell_v1 *layer_shell;
    struct wl_surface *surface;
    struct zwlr_layer_surface_v1 *layer_surface;
    // The fallback where there is no layer shell.
    struct xdg_wm_base *wm_base;
    struct xdg_surface *xdg_surface;
    struct xdg_toplevel *toplevel;
    int32_t toplevel_width, toplevel_height;
    struct wl_callback *frame_callback;
    struct sw_input input;
    ss_callbacks callbacks;
    int32_t width, height;
    int configured;
    uint32_t frames;
    // What the last frame drew, for hit tests: card or row rectangles by index (rows of a
    // group's title have zero width).
    struct rect *hits;
    int32_t hit_count;
    // The buffers frames are drawn into (a selection moved is a whole new frame), kept while
    // the surface lives.
    struct sw_kept_buffer buffers[2];
};

// A picture keeps its PNG until a card first shows it; it is then decoded and scaled to the
// card once (decoding a window-sized PNG takes about 18 ms here: doing it for every session
// before the first frame made the switcher wait for pictures nobody could see yet). The
// switcher asks for the thumbnails scenes draw with their snapshots, already the card's size.
struct ss_picture {
    uint8_t *png;
    size_t length;
    int prepared;
    cairo_surface_t *thumbnail;  // NULL when prepared and undecodable
};

// ---------------------------------------------------------------- globals

static void registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    struct ss_surface *s = data;
    if (strcmp(interface, wl_compositor_interface.name) == 0) {
        s->compositor = wl_registry_bind(registry, name, &wl_compositor_interface, version < 4 ? version : 4);
    } else if (strcmp(interface, wl_shm_interface.name) == 0) {
        s->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
    } else if (strcmp(interface, zwlr_layer_shell_v1_interface.name) == 0) {
        s->layer_shell = wl_registry_bind(registry, name, &zwlr_layer_shell_v1_interface, 1);
    } else if (strcmp(interface, xdg_wm_base_interface.name) == 0) {
        s->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
    } else if (strcmp(interface, wl_seat_interface.name) == 0) {
        sw_input_bind(&s->input, registry, name, version);
    }
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name) {}

static const struct wl_registry_listener registry_listener = { registry_global, registry_global_remove };

// ---------------------------------------------------------------- the layer surface

// Both shells end here: a size, then a frame drawn at it.
static void configured(struct ss_surface *s, int32_t width, int32_t height) {
    int32_t w = width > 0 ? width : 1280, h = height > 0 ? height : 720;
    // sway configures again after commits at the same size: nothing to redraw then (a redraw
    // would commit and be configured once more).
    if (s->configured && s->frames > 0 && w == s->width && h == s->height) return;
    s->width = w;
    s->height = h;
    s->configured = 1;
    if (s->callbacks.configure) s->callbacks.configure(s->callbacks.context, s->width, s->height);
}

static void layer_configure(void *data, struct zwlr_layer_surface_v1 *layer, uint32_t serial, uint32_t width, uint32_t height) {
    zwlr_layer_surface_v1_ack_configure(layer, serial);
    configured(data, (int32_t)width, (int32_t)height);
}

static void layer_closed(void *data, struct zwlr_layer_surface_v1 *layer) {
    struct ss_surface *s = data;
    if (s->callbacks.closed) s->callbacks.closed(s->callbacks.context);
}

static const struct zwlr_layer_surface_v1_listener layer_listener = { layer_configure, layer_closed };

static void wm_base_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial) { xdg_wm_base_pong(wm_base, serial); }

static const struct xdg_wm_base_listener wm_base_listener = { wm_base_ping };

// A toplevel's size comes first, then the surface's configure that makes it current.
static void toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width, int32_t height, struct wl_array *states) {
    struct ss_surface *s = data;
    s->toplevel_width = width;
    s->toplevel_height = height;
}

static void toplevel_close(void *data, struct xdg_toplevel *toplevel) {
    struct ss_surface *s = data;
    if (s->callbacks.closed) s->callbacks.closed(s->callbacks.context);
}

static const struct xdg_toplevel_listener toplevel_listener = { toplevel_configure, toplevel_close };

static void xdg_surface_configure(void *data, struct xdg_surface *xdg_surface, uint32_t serial) {
    struct ss_surface *s = data;
    xdg_surface_ack_configure(xdg_surface, serial);
    configured(s, s->toplevel_width, s->toplevel_height);
}

static const struct xdg_surface_listener xdg_surface_listener = { xdg_surface_configure };

static void frame_done(void *data, struct wl_callback *callback, uint32_t time) {
    struct ss_surface *s = data;
    wl_callback_destroy(callback);
    if (s->frame_callback == callback) s->frame_callback = NULL;
    if (s->callbacks.presented) s->callbacks.presented(s->callbacks.context, s->frames);
}

static const struct wl_callback_listener frame_listener = { frame_done };

ss_surface *ss_open(const char *name_space, int32_t keyboard, ss_callbacks callbacks, char *error, int error_size) {
    struct wl_display *display = wl_display_connect(NULL);
    if (!display) {
        if (error) snprintf(error, error_size, "cannot connect to the Wayland compositor (WAYLAND_DISPLAY): %s", strerror(errno));
        return NULL;
    }
    struct ss_surface *s = calloc(1, sizeof *s);
    s->display = display;
    s->callbacks = callbacks;
    sw_input_init(&s->input, (struct sw_input_callbacks){ callbacks.context, callbacks.key, callbacks.pointer });
    s->registry = wl_display_get_registry(display);
    wl_registry_add_listener(s->registry, &registry_listener, s);
    wl_display_roundtrip(display);
    if (!s->compositor || !s->shm || (!s->layer_shell && !s->wm_base)) {
        if (error) snprintf(error, error_size, "the compositor offers no %s", !s->compositor ? "wl_compositor" : !s->shm ? "wl_shm"
                            : "zwlr_layer_shell_v1 or xdg_wm_base (a shell to show a surface in)");
        ss_close(s);
        return NULL;
    }
    s->surface = wl_compositor_create_surface(s->compositor);
    if (s->layer_shell) {
        s->layer_surface = zwlr_layer_shell_v1_get_layer_surface(s->layer_shell, s->surface, NULL, ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY, name_space);
        zwlr_layer_surface_v1_add_listener(s->layer_surface, &layer_listener, s);
        zwlr_layer_surface_v1_set_anchor(s->layer_surface, ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM
                                         | ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT | ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT);
        zwlr_layer_surface_v1_set_size(s->layer_surface, 0, 0);
        // Over panels too: the switcher covers the whole output.
        zwlr_layer_surface_v1_set_exclusive_zone(s->layer_surface, -1);
        zwlr_layer_surface_v1_set_keyboard_interactivity(s->layer_surface, keyboard ? 1 : 0);
    } else {
        // No layer shell (weston, GNOME): an ordinary window, full screen, which the
        // compositor gives the keyboard as it gives any new window.
        xdg_wm_base_add_listener(s->wm_base, &wm_base_listener, s);
        s->xdg_surface = xdg_wm_base_get_xdg_surface(s->wm_base, s->surface);
        xdg_surface_add_listener(s->xdg_surface, &xdg_surface_listener, s);
        s->toplevel = xdg_surface_get_toplevel(s->xdg_surface);
        xdg_toplevel_add_listener(s->toplevel, &toplevel_listener, s);
        xdg_toplevel_set_app_id(s->toplevel, name_space);
        xdg_toplevel_set_title(s->toplevel, name_space);
        xdg_toplevel_set_fullscreen(s->toplevel, NULL);
    }
    wl_surface_commit(s->surface);
    wl_display_flush(display);
    return s;
}

int ss_fd(ss_surface *s) { return wl_display_get_fd(s->display); }

int ss_dispatch(ss_surface *s) {
    if (wl_display_dispatch(s->display) < 0) return -1;
    return wl_display_flush(s->display) < 0 && errno != EAGAIN ? -1 : 0;
}

void ss_close(ss_surface *s) {
    if (!s) return;
    if (s->frame_callback) wl_callback_destroy(s->frame_callback);
    sw_input_free(&s->input);
    sw_kept_buffers_free(s->buffers, 2);
    if (s->layer_surface) zwlr_layer_surface_v1_destroy(s->layer_surface);
    if (s->toplevel) xdg_toplevel_destroy(s->toplevel);
    if (s->xdg_surface) xdg_surface_destroy(s->xdg_surface);
    if (s->wm_base) xdg_wm_base_destroy(s->wm_base);
    if (s->surface) wl_surface_destroy(s->surface);
    if (s->layer_shell) zwlr_layer_shell_v1_destroy(s->layer_shell);
    if (s->shm) wl_shm_destroy(s->shm);
    if (s->compositor) wl_compositor_destroy(s->compositor);
    if (s->registry) wl_registry_destroy(s->registry);
    wl_display_flush(s->display);
    wl_display_disconnect(s->display);
    free(s->hits);
    free(s);
}

// ---------------------------------------------------------------- pictures

// A card's picture area is the thumbnail's box (the scene draws its thumbnail to fit it).
enum { THUMB_WIDTH = CARD_WIDTH - 16, THUMB_HEIGHT = PICTURE_HEIGHT - 8 };
_Static_assert(THUMB_WIDTH == SW_THUMBNAIL_WIDTH && THUMB_HEIGHT == SW_THUMBNAIL_HEIGHT, "a card's picture is a thumbnail");

ss_picture *ss_picture_from_png(const uint8_t *bytes, size_t length) {
    static const uint8_t signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (!bytes || length < 8 || memcmp(bytes, signature, 8) != 0) return NULL;
    struct ss_picture *picture = calloc(1, sizeof *picture);
    picture->png = malloc(length);
    memcpy(picture->png, bytes, length);
    picture->length = length;
    return picture;
}

void ss_picture_free(ss_picture *picture) {
    if (!picture) return;
    free(picture->png);
    if (picture->thumbnail) cairo_surface_destroy(picture->thumbnail);
    free(picture);
}

struct png_reader {
    const uint8_t *bytes;
    size_t length, at;
};

static cairo_status_t read_png(void *closure, unsigned char *data, unsigned int length) {
    struct png_reader *reader = closure;
    if (reader->at + length > reader->length) return CAIRO_STATUS_READ_ERROR;
    memcpy(data, reader->bytes + reader->at, length);
    reader->at += length;
    return CAIRO_STATUS_SUCCESS;
}

/// Decodes the PNG and scales it into the card's picture area, once. Touches only the picture:
/// several run at once on threads of their own.
static void prepare(struct ss_picture *picture) {
    if (picture->prepared) return;
    picture->prepared = 1;
    struct png_reader reader = { picture->png, picture->length, 0 };
    cairo_surface_t *image = cairo_image_surface_create_from_png_stream(read_png, &reader);
    free(picture->png);
    picture->png = NULL;
    int pw = cairo_image_surface_get_width(image), ph = cairo_image_surface_get_height(image);
    if (cairo_surface_status(image) != CAIRO_STATUS_SUCCESS || pw <= 0 || ph <= 0) {
        cairo_surface_destroy(image);
        return;
    }
    // Fitted into the card's picture area as a scene fits its thumbnail (one the scene drew
    // is that size already and is drawn as it is).
    picture->thumbnail = sw_thumbnail_of(image, pw, ph);
    cairo_surface_destroy(image);
}

struct preparation {
    struct ss_picture **pictures;
    int count, next;
    pthread_mutex_t lock;
};

static void *prepare_some(void *data) {
    struct preparation *work = data;
    for (;;) {
        pthread_mutex_lock(&work->lock);
        int index = work->next++;
        pthread_mutex_unlock(&work->lock);
        if (index >= work->count) return NULL;
        prepare(work->pictures[index]);
    }
}

/// Prepares the pictures on as many threads as there are processors.
static void prepare_all(struct ss_picture **pictures, int count) {
    if (count <= 0) return;
    struct preparation work = { pictures, count, 0, PTHREAD_MUTEX_INITIALIZER };
    long processors = sysconf(_SC_NPROCESSORS_ONLN);
    int helpers = (int)(processors > 1 ? processors - 1 : 0);
    if (helpers > count - 1) helpers = count - 1;
    if (helpers > 15) helpers = 15;
    pthread_t threads[15];
    int started = 0;
    for (int i = 0; i < helpers; i++) {
        if (pthread_create(&threads[started], NULL, prepare_some, &work) == 0) started++;
    }
    prepare_some(&work);
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
}

// ---------------------------------------------------------------- drawing

static void set_rgb(cairo_t *cr, uint32_t rgb) {
    cairo_set_source_rgb(cr, ((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0);
}

static void rounded(cairo_t *cr, double x, double y, double w, double h, double r) {
    cairo_new_sub_path(cr);
    cairo_arc(cr, x + w - r, y + r, r, -G_PI / 2, 0);
    cairo_arc(cr, x + w - r, y + h - r, r, 0, G_PI / 2);
    cairo_arc(cr, x + r, y + h - r, r, G_PI / 2, G_PI);
    cairo_arc(cr, x + r, y + r, r, G_PI, 3 * G_PI / 2);
    cairo_close_path(cr);
}

static void show_text(cairo_t *cr, const char *font, const char *text, double x, double y, int width, uint32_t rgb, int centred) {
    PangoLayout *layout = sw_text_layout(cr, font, text, width);
    pango_layout_set_ellipsize(layout, PANGO_ELLIPSIZE_END);
    pango_layout_set_height(layout, 0);  // one line
    if (centred) pango_layout_set_alignment(layout, PANGO_ALIGN_CENTER);
    set_rgb(cr, rgb);
    cairo_move_to(cr, x, y);
    pango_cairo_show_layout(cr, layout);
    g_object_unref(layout);
}

/// A frame being drawn: a buffer of the surface's size and a cairo context on it.
struct frame {
    struct sw_frame_buffer buffer;
    cairo_surface_t *target;
    cairo_t *cr;
};

/// Begins a frame, and the hit areas of its `items`; 0 before the first configure.
static int begin(struct ss_surface *s, struct frame *f, int32_t items) {
    if (!s->configured || s->width <= 0 || s->height <= 0) return 0;
    if (!sw_frame_buffer_begin(s->buffers, 2, s->shm, s->width, s->height, &f->buffer)) return 0;
    f->target = cairo_image_surface_create_for_data(f->buffer.pixels, CAIRO_FORMAT_ARGB32, s->width, s->height, s->width * 4);
    f->cr = cairo_create(f->target);
    free(s->hits);
    s->hits = calloc(items > 0 ? (size_t)items : 1, sizeof *s->hits);
    s->hit_count = items;
    return 1;
}

/// Ends a frame: commits it and asks to hear when it is on screen.
static void finish(struct ss_surface *s, struct frame *f) {
    cairo_destroy(f->cr);
    cairo_surface_flush(f->target);
    cairo_surface_destroy(f->target);
    sw_frame_buffer_end(&f->buffer);
    // One callback pending at a time: it reports the newest frame shown when it fires.
    if (!s->frame_callback) {
        s->frame_callback = wl_surface_frame(s->surface);
        wl_callback_add_listener(s->frame_callback, &frame_listener, s);
    }
    wl_surface_attach(s->surface, f->buffer.buffer, 0, 0);
    wl_surface_damage(s->surface, 0, 0, s->width, s->height);
    s->frames++;
    wl_surface_commit(s->surface);
    wl_display_flush(s->display);
}

static void draw_picture(cairo_t *cr, const ss_picture *picture, double x, double y, double w, double h) {
    cairo_surface_t *thumbnail = picture->thumbnail;
    int tw = cairo_image_surface_get_width(thumbnail), th = cairo_image_surface_get_height(thumbnail);
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    cairo_set_source_surface(cr, thumbnail, (int)(x + (w - tw) / 2), (int)(y + (h - th) / 2));
    cairo_paint(cr);
    cairo_restore(cr);
}

void ss_draw_cards(ss_surface *s, const char *heading, const char *hint, const ss_card *cards, int32_t count, int32_t selected) {
    struct frame f;
    if (!begin(s, &f, count)) return;
    cairo_t *cr = f.cr;
    set_rgb(cr, SS_BACKGROUND_RGB);
    cairo_paint(cr);
    int text_width = s->width - 2 * PAGE_MARGIN;
    show_text(cr, "Sans Bold 20", heading, PAGE_MARGIN, 28, text_width, 0xf2f2f2, 0);
    show_text(cr, "Sans 11", hint, PAGE_MARGIN, 62, text_width, 0x9a9ca3, 0);

    int card_height = PICTURE_HEIGHT + CARD_TEXT_HEIGHT;
    int columns = (s->width - 2 * PAGE_MARGIN + GAP) / (CARD_WIDTH + GAP);
    if (columns < 1) columns = 1;
    if (columns > count && count > 0) columns = count;
    int visible_rows = (s->height - HEADING_BAND - PAGE_MARGIN + GAP) / (card_height + GAP);
    if (visible_rows < 1) visible_rows = 1;
    // Scrolled by whole rows so that the selected card's row is on screen.
    int selected_row = selected >= 0 ? selected / columns : 0;
    int first_row = selected_row >= visible_rows ? selected_row - visible_rows + 1 : 0;
    double grid_width = columns * CARD_WIDTH + (columns - 1) * GAP;
    double left = (s->width - grid_width) / 2;
    // The pictures of the cards on screen, decoded side by side.
    struct ss_picture **unprepared = calloc(count > 0 ? (size_t)count : 1, sizeof *unprepared);
    int pending = 0;
    for (int32_t i = 0; i < count; i++) {
        int row = i / columns - first_row;
        struct ss_picture *picture = (struct ss_picture *)cards[i].picture;
        if (row >= 0 && row < visible_rows && picture && !picture->prepared) unprepared[pending++] = picture;
    }
    prepare_all(unprepared, pending);
    free(unprepared);
    for (int32_t i = 0; i < count; i++) {
        int row = i / columns - first_row, column = i % columns;
        if (row < 0 || row >= visible_rows) continue;
        double x = left + column * (CARD_WIDTH + GAP), y = HEADING_BAND + row * (card_height + GAP);
        s->hits[i] = (struct rect){ x, y, CARD_WIDTH, card_height };
        const ss_card *card = &cards[i];
        if (i == selected) {
            rounded(cr, x - 5, y - 5, CARD_WIDTH + 10, card_height + 10, 14);
            set_rgb(cr, SS_SELECTION_RGB);
            cairo_fill(cr);
        }
        rounded(cr, x, y, CARD_WIDTH, card_height, 10);
        set_rgb(cr, SS_CARD_RGB);
        cairo_fill(cr);
        double px = x + 8, py = y + 8, pw = CARD_WIDTH - 16, ph = PICTURE_HEIGHT - 8;
        if (card->kind == SS_CARD_NEW_WINDOW) {
            set_rgb(cr, 0x9a9ca3);
            cairo_set_line_width(cr, 6);
            cairo_move_to(cr, px + pw / 2 - 24, py + ph / 2);
            cairo_line_to(cr, px + pw / 2 + 24, py + ph / 2);
            cairo_move_to(cr, px + pw / 2, py + ph / 2 - 24);
            cairo_line_to(cr, px + pw / 2, py + ph / 2 + 24);
            cairo_stroke(cr);
        } else if (card->picture && card->picture->thumbnail) {
            draw_picture(cr, card->picture, px, py, pw, ph);
        } else {
            set_rgb(cr, 0x2b2d33);
            cairo_rectangle(cr, px, py, pw, ph);
            cairo_fill(cr);
            show_text(cr, "Sans 11", "no picture yet", px, py + ph / 2 - 8, (int)pw, 0x7c7e85, 1);
        }
        show_text(cr, "Sans Bold 11", card->title, x + 10, y + PICTURE_HEIGHT + 6, CARD_WIDTH - 20, 0xf2f2f2, 0);
        show_text(cr, "Sans 9", card->detail, x + 10, y + PICTURE_HEIGHT + 28, CARD_WIDTH - 20, 0xa9abb2, 0);
    }
    finish(s, &f);
}

int32_t ss_item_at(ss_surface *s, double x, double y) {
    for (int32_t i = 0; i < s->hit_count; i++) {
        struct rect r = s->hits[i];
        if (r.w > 0 && x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h) return i;
    }
    return -1;
}

int32_t ss_item_frame(ss_surface *s, int32_t index, int32_t frame[4]) {
    if (index < 0 || index >= s->hit_count || s->hits[index].w <= 0) return 0;
    struct rect r = s->hits[index];
    frame[0] = (int32_t)r.x;
    frame[1] = (int32_t)r.y;
    frame[2] = (int32_t)r.w;
    frame[3] = (int32_t)r.h;
    return 1;
}

void ss_draw_rows(ss_surface *s, const char *heading, const ss_row *rows, int32_t count, int32_t selected) {
    struct frame f;
    if (!begin(s, &f, count)) return;
    cairo_t *cr = f.cr;
    // The windows stay visible, dimmed, around the panel (the overlay is translucent).
    cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
    cairo_set_source_rgba(cr, 0, 0, 0, 0.35);
    cairo_paint(cr);
    cairo_set_operator(cr, CAIRO_OPERATOR_OVER);
    // Columns of rows, a new column when one is full, as iPadOS lays out its overlay.
    int max_height = s->height - 2 * PAGE_MARGIN - 2 * PANEL_PADDING - 48;
    int per_column = max_height / ROW_HEIGHT;
    if (per_column < 1) per_column = 1;
    int columns = (count + per_column - 1) / per_column;
    if (columns < 1) columns = 1;
    int rows_in_column = count < per_column ? count : per_column;
    double panel_w = columns * COLUMN_WIDTH + 2 * PANEL_PADDING;
    double panel_h = rows_in_column * ROW_HEIGHT + 2 * PANEL_PADDING + 48;
    if (panel_w > s->width - 2 * PAGE_MARGIN) panel_w = s->width - 2 * PAGE_MARGIN;
    double panel_x = (s->width - panel_w) / 2, panel_y = (s->height - panel_h) / 2;
    rounded(cr, panel_x, panel_y, panel_w, panel_h, 16);
    set_rgb(cr, 0xf4f4f2);
    cairo_fill(cr);
    show_text(cr, "Sans Bold 15", heading, panel_x + PANEL_PADDING, panel_y + PANEL_PADDING - 6, (int)panel_w - 2 * PANEL_PADDING, 0x202020, 0);
    for (int32_t i = 0; i < count; i++) {
        int column = i / per_column, row = i % per_column;
        double x = panel_x + PANEL_PADDING + column * COLUMN_WIDTH;
        double y = panel_y + PANEL_PADDING + 40 + row * ROW_HEIGHT;
        if (x + COLUMN_WIDTH > panel_x + panel_w + 1) continue;
        const ss_row *line = &rows[i];
        if (!line->shortcut) {
            show_text(cr, "Sans Bold 10", line->title, x, y + 8, COLUMN_WIDTH - 16, 0x7a7a7a, 0);
            continue;
        }
        s->hits[i] = (struct rect){ x - 6, y, COLUMN_WIDTH - 10, ROW_HEIGHT };
        if (i == selected) {
            rounded(cr, x - 6, y + 1, COLUMN_WIDTH - 10, ROW_HEIGHT - 2, 6);
            set_rgb(cr, SS_SELECTION_RGB);
            cairo_fill(cr);
        }
        uint32_t ink = i == selected ? 0xffffff : 0x202020;
        show_text(cr, "Sans 11", line->title, x + 4, y + 6, COLUMN_WIDTH - 130, ink, 0);
        show_text(cr, "Sans 11", line->shortcut, x + COLUMN_WIDTH - 130, y + 6, 110, i == selected ? 0xffffff : 0x6a6a6a, 0);
    }
    finish(s, &f);
}
