// The window layer's Wayland client (see include/scene_window.h). Written in C because the
// protocol's request functions are variadic and its listeners are structs of C function
// pointers that must live as long as their proxies: Swift sees only the small API above.
#define _GNU_SOURCE
#include "scene_window.h"
#include "xdg-shell-client-protocol.h"
#include "xdg-activation-v1-client-protocol.h"
#include "xdg-decoration-unstable-v1-client-protocol.h"
#include "wayland_common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ctype.h>
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>

enum { DEFAULT_WIDTH = 640, DEFAULT_HEIGHT = 480, MARGIN = 16, HEADING_HEIGHT = 40 };

struct sw_window {
    struct wl_display *display;
    struct wl_registry *registry;
    struct wl_compositor *compositor;
    struct wl_shm *shm;
    struct xdg_wm_base *wm_base;
    struct wl_surface *surface;
    struct xdg_surface *xdg_surface;
    struct xdg_toplevel *toplevel;
    struct xdg_activation_v1 *activation;
    struct zxdg_decoration_manager_v1 *decorations;
    struct zxdg_toplevel_decoration_v1 *decoration;
    char *app_id;
    struct sw_input input;  // the seat: keyboard, pointer, the press a drag starts from
    struct wl_data_device_manager *data_manager;
    struct wl_data_device *data_device;
    // The offer being dragged over the window, and whether it is of SW_DRAG_MIME.
    struct wl_data_offer *offer, *announced;
    int offer_ours, announced_ours;
    uint32_t offer_action;
    double drop_x, drop_y;
    // The drag this window started: its source and data, and whether a window took it.
    struct wl_data_source *drag_source;
    uint8_t *drag_data;
    int32_t drag_length;
    int drag_dropped;
    sw_callbacks callbacks;
    // What the last xdg_toplevel.configure asked for, applied at xdg_surface.configure.
    int32_t pending_width, pending_height, pending_activated;
    int32_t width, height;
    int configured;
    unsigned frames;  // frames committed so far
    char *heading;
    char *text;
    int32_t cursor;
    // The buffers frames are drawn into, kept while the window lives: one on screen, one to
    // draw the next frame into.
    struct sw_kept_buffer buffers[2];
};

static void draw(struct sw_window *w);

// ---------------------------------------------------------------- globals

static void registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    struct sw_window *w = data;
    if (strcmp(interface, wl_compositor_interface.name) == 0) {
        w->compositor = wl_registry_bind(registry, name, &wl_compositor_interface, version < 4 ? version : 4);
    } else if (strcmp(interface, wl_shm_interface.name) == 0) {
        w->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
    } else if (strcmp(interface, xdg_wm_base_interface.name) == 0) {
        w->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, version < 2 ? version : 2);
    } else if (strcmp(interface, xdg_activation_v1_interface.name) == 0) {
        w->activation = wl_registry_bind(registry, name, &xdg_activation_v1_interface, 1);
    } else if (strcmp(interface, zxdg_decoration_manager_v1_interface.name) == 0) {
        w->decorations = wl_registry_bind(registry, name, &zxdg_decoration_manager_v1_interface, 1);
    } else if (strcmp(interface, wl_data_device_manager_interface.name) == 0) {
        w->data_manager = wl_registry_bind(registry, name, &wl_data_device_manager_interface, version < 3 ? version : 3);
    } else if (strcmp(interface, wl_seat_interface.name) == 0) {
        sw_input_bind(&w->input, registry, name, version);
    }
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name) {}

static const struct wl_registry_listener registry_listener = { registry_global, registry_global_remove };

static void wm_base_ping(void *data, struct xdg_wm_base *base, uint32_t serial) {
    xdg_wm_base_pong(base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = { wm_base_ping };

// ---------------------------------------------------------------- drag and drop
// A scene drags a user activity out of its window (the source); a window of a scene under the
// pointer takes it when it is of SW_DRAG_MIME (the target). A drop on no window, or on one that
// does not take it, cancels the drag: the source's scene then opens a window for the activity.

static void forget_offer(struct sw_window *w) {
    if (w->offer) wl_data_offer_destroy(w->offer);
    if (w->announced == w->offer) w->announced = NULL;
    w->offer = NULL;
    w->offer_ours = 0;
    w->offer_action = 0;
}

static void offer_offer(void *data, struct wl_data_offer *offer, const char *mime) {
    struct sw_window *w = data;
    if (strcmp(mime, SW_DRAG_MIME) != 0) return;
    if (offer == w->announced) w->announced_ours = 1;
    if (offer == w->offer) w->offer_ours = 1;
}

static void offer_source_actions(void *data, struct wl_data_offer *offer, uint32_t actions) {}

static void offer_action(void *data, struct wl_data_offer *offer, uint32_t action) {
    struct sw_window *w = data;
    if (offer == w->offer) w->offer_action = action;
}

static const struct wl_data_offer_listener offer_listener = { offer_offer, offer_source_actions, offer_action };

static void device_data_offer(void *data, struct wl_data_device *device, struct wl_data_offer *offer) {
    struct sw_window *w = data;
    if (w->announced && w->announced != w->offer) wl_data_offer_destroy(w->announced);
    w->announced = offer;
    w->announced_ours = 0;
    wl_data_offer_add_listener(offer, &offer_listener, w);
}

static void device_enter(void *data, struct wl_data_device *device, uint32_t serial, struct wl_surface *surface,
                         wl_fixed_t x, wl_fixed_t y, struct wl_data_offer *offer) {
    struct sw_window *w = data;
    if (w->offer && w->offer != offer) forget_offer(w);
    w->offer = offer;
    w->offer_ours = offer && offer == w->announced && w->announced_ours;
    w->drop_x = wl_fixed_to_double(x);
    w->drop_y = wl_fixed_to_double(y);
    if (!offer) return;
    wl_data_offer_accept(offer, serial, w->offer_ours ? SW_DRAG_MIME : NULL);
    if (wl_data_offer_get_version(offer) >= 3) {
        uint32_t copy = WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY;
        wl_data_offer_set_actions(offer, w->offer_ours ? copy : 0, w->offer_ours ? copy : 0);
    }
}

static void device_leave(void *data, struct wl_data_device *device) {
    forget_offer(data);
}

static void device_motion(void *data, struct wl_data_device *device, uint32_t time, wl_fixed_t x, wl_fixed_t y) {
    struct sw_window *w = data;
    w->drop_x = wl_fixed_to_double(x);
    w->drop_y = wl_fixed_to_double(y);
}

/// What the source sends for the offer, read to its end (the source is another process; a
/// drop on this window's own drag takes the data without the round trip).
static uint8_t *receive_offer(struct sw_window *w, int32_t *length) {
    if (w->drag_source) {
        *length = w->drag_length;
        uint8_t *copy = malloc(w->drag_length > 0 ? (size_t)w->drag_length : 1);
        if (w->drag_length > 0) memcpy(copy, w->drag_data, (size_t)w->drag_length);
        return copy;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) return NULL;
    wl_data_offer_receive(w->offer, SW_DRAG_MIME, fds[1]);
    close(fds[1]);
    wl_display_flush(w->display);
    size_t capacity = 4096, used = 0;
    uint8_t *bytes = malloc(capacity);
    for (;;) {
        if (used == capacity) {
            if (capacity >= (1u << 22)) break;  // an activity is far smaller: stop at 4 MiB
            capacity *= 2;
            bytes = realloc(bytes, capacity);
        }
        ssize_t n = read(fds[0], bytes + used, capacity - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
    }
    close(fds[0]);
    *length = (int32_t)used;
    return bytes;
}

static void device_drop(void *data, struct wl_data_device *device) {
    struct sw_window *w = data;
    if (!w->offer) return;
    int taken = 0;
    if (w->offer_ours && w->callbacks.drop) {
        int32_t length = 0;
        uint8_t *bytes = receive_offer(w, &length);
        if (bytes) {
            taken = w->callbacks.drop(w->callbacks.context, bytes, length, w->drop_x, w->drop_y) != 0;
            free(bytes);
        }
    }
    // finish is valid only for an accepted offer with an action agreed on.
    if (taken && w->offer_action && wl_data_offer_get_version(w->offer) >= 3) wl_data_offer_finish(w->offer);
    forget_offer(w);
}

static void device_selection(void *data, struct wl_data_device *device, struct wl_data_offer *offer) {
    struct sw_window *w = data;
    // The clipboard is not ours to use: an offer announced for it is dropped.
    if (offer && offer != w->offer) {
        if (offer == w->announced) w->announced = NULL;
        wl_data_offer_destroy(offer);
    }
}

static const struct wl_data_device_listener device_listener = {
    device_data_offer, device_enter, device_leave, device_motion, device_drop, device_selection,
};

static void end_drag(struct sw_window *w, int dropped) {
    if (!w->drag_source) return;
    wl_data_source_destroy(w->drag_source);
    w->drag_source = NULL;
    free(w->drag_data);
    w->drag_data = NULL;
    w->drag_length = 0;
    if (w->callbacks.drag_ended) w->callbacks.drag_ended(w->callbacks.context, dropped);
}

static void source_target(void *data, struct wl_data_source *source, const char *mime) {}

static void source_send(void *data, struct wl_data_source *source, const char *mime, int32_t fd) {
    struct sw_window *w = data;
    int32_t written = 0;
    while (written < w->drag_length) {
        ssize_t n = write(fd, w->drag_data + written, (size_t)(w->drag_length - written));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        written += (int32_t)n;
    }
    close(fd);
}

static void source_cancelled(void *data, struct wl_data_source *source) {
    struct sw_window *w = data;
    end_drag(w, w->drag_dropped);
}

static void source_dnd_drop_performed(void *data, struct wl_data_source *source) {
    struct sw_window *w = data;
    w->drag_dropped = 1;
}

static void source_dnd_finished(void *data, struct wl_data_source *source) {
    end_drag(data, 1);
}

static void source_action(void *data, struct wl_data_source *source, uint32_t action) {}

static const struct wl_data_source_listener source_listener = {
    source_target, source_send, source_cancelled, source_dnd_drop_performed, source_dnd_finished, source_action,
};

// ---------------------------------------------------------------- the toplevel

static void toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width, int32_t height, struct wl_array *states) {
    struct sw_window *w = data;
    w->pending_width = width;
    w->pending_height = height;
    w->pending_activated = 0;
    uint32_t *state;
    wl_array_for_each(state, states) {
        if (*state == XDG_TOPLEVEL_STATE_ACTIVATED) w->pending_activated = 1;
    }
}

static void toplevel_close(void *data, struct xdg_toplevel *toplevel) {
    struct sw_window *w = data;
    if (w->callbacks.close) w->callbacks.close(w->callbacks.context);
}

static void toplevel_configure_bounds(void *data, struct xdg_toplevel *toplevel, int32_t width, int32_t height) {}
static void toplevel_wm_capabilities(void *data, struct xdg_toplevel *toplevel, struct wl_array *capabilities) {}

static const struct xdg_toplevel_listener toplevel_listener = {
    toplevel_configure, toplevel_close, toplevel_configure_bounds, toplevel_wm_capabilities,
};

static void xdg_surface_configure(void *data, struct xdg_surface *surface, uint32_t serial) {
    struct sw_window *w = data;
    xdg_surface_ack_configure(surface, serial);
    // Zero means "your choice": keep the size the window has, else the default.
    w->width = w->pending_width > 0 ? w->pending_width : (w->width > 0 ? w->width : DEFAULT_WIDTH);
    w->height = w->pending_height > 0 ? w->pending_height : (w->height > 0 ? w->height : DEFAULT_HEIGHT);
    w->configured = 1;
    unsigned before = w->frames;
    if (w->callbacks.configure) w->callbacks.configure(w->callbacks.context, w->width, w->height, w->pending_activated);
    // The scene usually draws from the callback (its content at the new size); draw only
    // when it did not, so no frame is made twice.
    if (w->frames == before) draw(w);
}

static const struct xdg_surface_listener xdg_surface_listener = { xdg_surface_configure };

// ---------------------------------------------------------------- drawing

int32_t sw_text_index_at(sw_window *w, double x, double y) {
    if (!w->configured || w->width <= 0) return -1;
    cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(scratch);
    int text_width = w->width - 2 * MARGIN;
    PangoLayout *body = sw_text_layout(cr, "Sans 13", w->text, text_width < 1 ? 1 : text_width);
    int index = -1, trailing = 0;
    double lx = x - MARGIN, ly = y - (HEADING_HEIGHT + MARGIN);
    int inside = ly >= 0 && pango_layout_xy_to_index(body, (int)(lx * PANGO_SCALE), (int)(ly * PANGO_SCALE), &index, &trailing);
    if (!inside && ly >= 0) {
        // Beside a line (past its end): that line still counts.
        PangoRectangle logical;
        pango_layout_get_pixel_extents(body, NULL, &logical);
        if (ly < logical.height) pango_layout_xy_to_index(body, (int)(lx * PANGO_SCALE), (int)(ly * PANGO_SCALE), &index, &trailing);
        else index = -1;
    }
    // Past the middle of a character is after it (pango says so with `trailing`).
    if (index >= 0 && trailing > 0 && w->text) index = (int)(g_utf8_offset_to_pointer(w->text + index, trailing) - w->text);
    g_object_unref(body);
    cairo_destroy(cr);
    cairo_surface_destroy(scratch);
    return index;
}

/// Paints a frame of the scene: the heading on a band, the text wrapped, the cursor as a bar
/// before the character at `cursor` (a byte offset; negative: none). The window and its
/// snapshots draw with this one function, so a snapshot is what the window showed.
static void paint(cairo_t *cr, int width, int height, const char *heading_text, const char *text, int32_t cursor) {
    cairo_set_source_rgb(cr, 0.99, 0.99, 0.98);
    cairo_paint(cr);
    cairo_set_source_rgb(cr, 0.91, 0.91, 0.89);
    cairo_rectangle(cr, 0, 0, width, HEADING_HEIGHT);
    cairo_fill(cr);
    int text_width = width - 2 * MARGIN;
    if (text_width < 1) text_width = 1;
    PangoLayout *heading = sw_text_layout(cr, "Sans Bold 13", heading_text, text_width);
    pango_layout_set_ellipsize(heading, PANGO_ELLIPSIZE_END);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_move_to(cr, MARGIN, 10);
    pango_cairo_show_layout(cr, heading);
    g_object_unref(heading);
    PangoLayout *body = sw_text_layout(cr, "Sans 13", text, text_width);
    cairo_set_source_rgb(cr, 0.13, 0.13, 0.13);
    cairo_move_to(cr, MARGIN, HEADING_HEIGHT + MARGIN);
    pango_cairo_show_layout(cr, body);
    if (cursor >= 0) {
        int length = text ? (int)strlen(text) : 0;
        PangoRectangle at;
        pango_layout_index_to_pos(body, cursor < length ? cursor : length, &at);
        cairo_set_source_rgb(cr, 0.1, 0.35, 0.85);
        cairo_rectangle(cr, MARGIN + at.x / PANGO_SCALE, HEADING_HEIGHT + MARGIN + at.y / PANGO_SCALE, 2,
                        at.height > 0 ? at.height / PANGO_SCALE : 18);
        cairo_fill(cr);
    }
    g_object_unref(body);
}

static void draw(struct sw_window *w) {
    if (!w->configured || w->width <= 0 || w->height <= 0) return;
    struct sw_frame_buffer frame;
    if (!sw_frame_buffer_begin(w->buffers, 2, w->shm, w->width, w->height, &frame)) return;
    cairo_surface_t *target = cairo_image_surface_create_for_data(frame.pixels, CAIRO_FORMAT_ARGB32, w->width, w->height, w->width * 4);
    cairo_t *cr = cairo_create(target);
    paint(cr, w->width, w->height, w->heading, w->text, w->cursor);
    cairo_destroy(cr);
    cairo_surface_flush(target);
    cairo_surface_destroy(target);
    sw_frame_buffer_end(&frame);
    wl_surface_attach(w->surface, frame.buffer, 0, 0);
    wl_surface_damage(w->surface, 0, 0, w->width, w->height);
    wl_surface_commit(w->surface);
    wl_display_flush(w->display);
    w->frames++;
}

void sw_warm_up(void) {
    // The fonts (sw_prepare_fonts), for this thread, which draws the window; and, as a process
    // that warms up has time (a prewarmed one, before its Hello), the faces other scripts fall
    // back to as well.
    sw_use_prepared_fonts();
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 64, 64);
    cairo_t *cr = cairo_create(surface);
    paint(cr, 64, 64, "Ag", "Ag 漢字 ✓", 0);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
}

// ---------------------------------------------------------------- snapshots

struct png_buffer {
    unsigned char *bytes;
    size_t length, capacity;
};

static cairo_status_t append_png(void *closure, const unsigned char *data, unsigned int length) {
    struct png_buffer *out = closure;
    if (out->length + length > out->capacity) {
        size_t capacity = out->capacity ? out->capacity : 65536;
        while (capacity < out->length + length) capacity *= 2;
        unsigned char *grown = realloc(out->bytes, capacity);
        if (!grown) return CAIRO_STATUS_NO_MEMORY;
        out->bytes = grown;
        out->capacity = capacity;
    }
    memcpy(out->bytes + out->length, data, length);
    out->length += length;
    return CAIRO_STATUS_SUCCESS;
}

/// `surface` as PNG bytes, or NULL.
static unsigned char *encode_png(cairo_surface_t *surface, size_t *length) {
    *length = 0;
    struct png_buffer out = { NULL, 0, 0 };
    if (cairo_surface_write_to_png_stream(surface, append_png, &out) != CAIRO_STATUS_SUCCESS) {
        free(out.bytes);
        return NULL;
    }
    *length = out.length;
    return out.bytes;
}

unsigned char *sw_snapshot_png(int32_t width, int32_t height, const char *heading, const char *text, int32_t cursor, size_t *length,
                               unsigned char **thumbnail, size_t *thumbnail_length) {
    *length = 0;
    if (thumbnail) {
        *thumbnail = NULL;
        *thumbnail_length = 0;
    }
    if (width <= 0 || height <= 0) return NULL;
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
    cairo_t *cr = cairo_create(surface);
    paint(cr, width, height, heading, text, cursor);
    cairo_destroy(cr);
    unsigned char *bytes = encode_png(surface, length);
    if (bytes && thumbnail) {
        cairo_surface_t *small = sw_thumbnail_of(surface, width, height);
        *thumbnail = encode_png(small, thumbnail_length);
        cairo_surface_destroy(small);
    }
    cairo_surface_destroy(surface);
    return bytes;
}

void sw_free(void *bytes) { free(bytes); }

// ---------------------------------------------------------------- the API

// A connection and the globals it binds, without a window yet: NULL (with a reason in `error`)
// if there is no compositor or it lacks xdg-shell.
static struct sw_window *connect_display(char *error, int error_size) {
    struct wl_display *display = wl_display_connect(NULL);
    if (!display) {
        if (error) snprintf(error, error_size, "cannot connect to the Wayland compositor (WAYLAND_DISPLAY): %s", strerror(errno));
        return NULL;
    }
    struct sw_window *w = calloc(1, sizeof *w);
    w->display = display;
    w->cursor = -1;
    // The input's callbacks are the window's, set when it opens; they are read at each event.
    sw_input_init(&w->input, (struct sw_input_callbacks){ 0 });
    w->registry = wl_display_get_registry(display);
    wl_registry_add_listener(w->registry, &registry_listener, w);
    wl_display_roundtrip(display);
    if (!w->compositor || !w->shm || !w->wm_base) {
        if (error) snprintf(error, error_size, "the compositor offers no %s", !w->compositor ? "wl_compositor" : !w->shm ? "wl_shm" : "xdg_wm_base (xdg-shell)");
        sw_close(w);
        return NULL;
    }
    xdg_wm_base_add_listener(w->wm_base, &wm_base_listener, w);
    return w;
}

// The connection made ahead (`sw_prepare`), until the first window takes it. Made once, on
// whichever thread asks first (the preloading thread, or the first window's): a window that
// opens while it is being made waits for it instead of making a second one.
static struct sw_window *prepared;
static pthread_once_t prepare_once = PTHREAD_ONCE_INIT;

static void prepare_connection(void) {
    prepared = connect_display(NULL, 0);
    if (!prepared) return;
    // And the buffer of the first frame, at the size a window has until the compositor says
    // otherwise, its pages allocated now rather than while that frame waits for them.
    struct sw_kept_buffer *first = sw_kept_buffer(prepared->buffers, 2, prepared->shm, DEFAULT_WIDTH, DEFAULT_HEIGHT, 1);
    if (first) first->busy = 0;
    wl_display_flush(prepared->display);
}

int sw_prepare(void) {
    pthread_once(&prepare_once, prepare_connection);
    return prepared != NULL;
}

// Whether the connection still works: it reads what the compositor sent meanwhile (a global
// added or removed, the keyboard's keymap) until nothing is left, and fails at the end of a
// connection the compositor closed. What a compositor sent just before it went away comes
// first, so one read alone can find the connection alive.
static int still_connected(struct wl_display *display) {
    for (;;) {
        while (wl_display_prepare_read(display) != 0) {
            if (wl_display_dispatch_pending(display) < 0) return 0;
        }
        struct pollfd ready = { .fd = wl_display_get_fd(display), .events = POLLIN };
        if (poll(&ready, 1, 0) <= 0) {
            wl_display_cancel_read(display);
            break;
        }
        if (wl_display_read_events(display) < 0) return 0;
    }
    if (wl_display_dispatch_pending(display) < 0) return 0;
    return wl_display_flush(display) >= 0 || errno == EAGAIN;
}

sw_window *sw_open(const char *app_id, const char *title, sw_callbacks callbacks, char *error, int error_size) {
    pthread_once(&prepare_once, prepare_connection);
    struct sw_window *w = prepared;
    prepared = NULL;
    if (w && !still_connected(w->display)) {
        sw_close(w);
        w = NULL;
    }
    if (!w) w = connect_display(error, error_size);
    if (!w) return NULL;
    w->callbacks = callbacks;
    w->input.callbacks = (struct sw_input_callbacks){ callbacks.context, callbacks.key, callbacks.modifiers, callbacks.pointer };
    if (w->data_manager && w->input.seat) {
        w->data_device = wl_data_device_manager_get_data_device(w->data_manager, w->input.seat);
        wl_data_device_add_listener(w->data_device, &device_listener, w);
    }
    w->surface = wl_compositor_create_surface(w->compositor);
    w->xdg_surface = xdg_wm_base_get_xdg_surface(w->wm_base, w->surface);
    xdg_surface_add_listener(w->xdg_surface, &xdg_surface_listener, w);
    w->toplevel = xdg_surface_get_toplevel(w->xdg_surface);
    xdg_toplevel_add_listener(w->toplevel, &toplevel_listener, w);
    xdg_toplevel_set_app_id(w->toplevel, app_id);
    xdg_toplevel_set_title(w->toplevel, title);
    w->app_id = strdup(app_id ? app_id : "");
    // The compositor draws the title bar and its close button where it offers to; the scene
    // then only draws its content. Without the protocol the window has no decorations.
    if (w->decorations) {
        w->decoration = zxdg_decoration_manager_v1_get_toplevel_decoration(w->decorations, w->toplevel);
        zxdg_toplevel_decoration_v1_set_mode(w->decoration, ZXDG_TOPLEVEL_DECORATION_V1_MODE_SERVER_SIDE);
    }
    // The first commit carries no buffer: the compositor answers with the first configure.
    wl_surface_commit(w->surface);
    wl_display_flush(w->display);
    return w;
}

// ---------------------------------------------------------------- activation

static void token_done(void *data, struct xdg_activation_token_v1 *token, const char *text) {
    struct sw_window *w = data;
    xdg_activation_v1_activate(w->activation, text, w->surface);
    xdg_activation_token_v1_destroy(token);
    wl_display_flush(w->display);
}

static const struct xdg_activation_token_v1_listener token_listener = { token_done };

int sw_activate(sw_window *w, const char *token) {
    if (!w->activation) return 0;
    if (token && *token) {
        xdg_activation_v1_activate(w->activation, token, w->surface);
    } else {
        // No token from whoever asked: ask for one in the window's own name, without a seat
        // and serial (it has no input event to name: the request came from the broker).
        // Compositors that honour only tokens of the focused client mark the window urgent.
        struct xdg_activation_token_v1 *request = xdg_activation_v1_get_activation_token(w->activation);
        xdg_activation_token_v1_add_listener(request, &token_listener, w);
        xdg_activation_token_v1_set_app_id(request, w->app_id);
        xdg_activation_token_v1_set_surface(request, w->surface);
        xdg_activation_token_v1_commit(request);
    }
    wl_display_flush(w->display);
    return 1;
}

int sw_start_drag(sw_window *w, const uint8_t *data, int32_t length) {
    if (!w->data_manager || !w->data_device || !w->input.pressed_serial || w->drag_source || length < 0) return 0;
    w->drag_data = malloc(length > 0 ? (size_t)length : 1);
    if (length > 0) memcpy(w->drag_data, data, (size_t)length);
    w->drag_length = length;
    w->drag_dropped = 0;
    w->drag_source = wl_data_device_manager_create_data_source(w->data_manager);
    wl_data_source_add_listener(w->drag_source, &source_listener, w);
    wl_data_source_offer(w->drag_source, SW_DRAG_MIME);
    if (wl_data_source_get_version(w->drag_source) >= 3) {
        wl_data_source_set_actions(w->drag_source, WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY | WL_DATA_DEVICE_MANAGER_DND_ACTION_MOVE);
    }
    wl_data_device_start_drag(w->data_device, w->drag_source, w->surface, NULL, w->input.pressed_serial);
    wl_display_flush(w->display);
    return 1;
}

int sw_fd(sw_window *w) {
    return wl_display_get_fd(w->display);
}

int sw_dispatch(sw_window *w) {
    if (wl_display_dispatch(w->display) < 0) return -1;
    return wl_display_flush(w->display) < 0 && errno != EAGAIN ? -1 : 0;
}

void sw_set_title(sw_window *w, const char *title) {
    xdg_toplevel_set_title(w->toplevel, title);
    wl_display_flush(w->display);
}

void sw_render(sw_window *w, const char *heading, const char *text, int32_t cursor) {
    free(w->heading);
    free(w->text);
    w->heading = strdup(heading ? heading : "");
    w->text = strdup(text ? text : "");
    w->cursor = cursor;
    draw(w);
}

int32_t sw_width(sw_window *w) { return w->configured ? w->width : 0; }
int32_t sw_height(sw_window *w) { return w->configured ? w->height : 0; }

void sw_close(sw_window *w) {
    if (!w) return;
    if (w->drag_source) wl_data_source_destroy(w->drag_source);
    free(w->drag_data);
    if (w->offer) wl_data_offer_destroy(w->offer);
    if (w->announced && w->announced != w->offer) wl_data_offer_destroy(w->announced);
    if (w->data_device) wl_data_device_destroy(w->data_device);
    if (w->data_manager) wl_data_device_manager_destroy(w->data_manager);
    sw_input_free(&w->input);
    sw_kept_buffers_free(w->buffers, 2);
    if (w->decoration) zxdg_toplevel_decoration_v1_destroy(w->decoration);
    if (w->decorations) zxdg_decoration_manager_v1_destroy(w->decorations);
    if (w->activation) xdg_activation_v1_destroy(w->activation);
    free(w->app_id);
    if (w->toplevel) xdg_toplevel_destroy(w->toplevel);
    if (w->xdg_surface) xdg_surface_destroy(w->xdg_surface);
    if (w->surface) wl_surface_destroy(w->surface);
    if (w->wm_base) xdg_wm_base_destroy(w->wm_base);
    if (w->shm) wl_shm_destroy(w->shm);
    if (w->compositor) wl_compositor_destroy(w->compositor);
    if (w->registry) wl_registry_destroy(w->registry);
    wl_display_flush(w->display);
    wl_display_disconnect(w->display);
    free(w->heading);
    free(w->text);
    free(w);
}
