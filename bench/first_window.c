// The limit for "open -> first frame": a minimal Wayland client that maps one window (an
// xdg_toplevel with one wl_shm buffer) and then waits to be killed. The benchmark times its
// spawn to the compositor's "new window" event, as it times a scene's open. Built with
// -DWITH_TEXT (and pangocairo) it also draws a line of text, as a scene's first frame does.
#define _GNU_SOURCE
#include "xdg-shell-client-protocol.h"

#ifdef WITH_TEXT
#include <pango/pangocairo.h>
#define APP_ID "first-window-text"
#else
#define APP_ID "first-window"
#endif
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <wayland-client.h>

static struct wl_compositor *compositor;
static struct wl_shm *shm;
static struct xdg_wm_base *wm_base;
static int configured;

static void global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    if (strcmp(interface, wl_compositor_interface.name) == 0) compositor = wl_registry_bind(registry, name, &wl_compositor_interface, 4);
    else if (strcmp(interface, wl_shm_interface.name) == 0) shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
    else if (strcmp(interface, xdg_wm_base_interface.name) == 0) wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
}
static void global_remove(void *data, struct wl_registry *registry, uint32_t name) {}
static const struct wl_registry_listener registry_listener = { global, global_remove };
static void ping(void *data, struct xdg_wm_base *base, uint32_t serial) { xdg_wm_base_pong(base, serial); }
static const struct xdg_wm_base_listener wm_base_listener = { ping };
static void surface_configure(void *data, struct xdg_surface *surface, uint32_t serial) {
    xdg_surface_ack_configure(surface, serial);
    configured = 1;
}
static const struct xdg_surface_listener surface_listener = { surface_configure };
static void toplevel_configure(void *data, struct xdg_toplevel *t, int32_t w, int32_t h, struct wl_array *s) {}
static void toplevel_close(void *data, struct xdg_toplevel *t) {}
static const struct xdg_toplevel_listener toplevel_listener = { toplevel_configure, toplevel_close };

int main(void) {
    struct wl_display *display = wl_display_connect(NULL);
    if (!display) return 1;
    struct wl_registry *registry = wl_display_get_registry(display);
    wl_registry_add_listener(registry, &registry_listener, NULL);
    wl_display_roundtrip(display);
    if (!compositor || !shm || !wm_base) return 1;
    xdg_wm_base_add_listener(wm_base, &wm_base_listener, NULL);
    struct wl_surface *surface = wl_compositor_create_surface(compositor);
    struct xdg_surface *xdg = xdg_wm_base_get_xdg_surface(wm_base, surface);
    xdg_surface_add_listener(xdg, &surface_listener, NULL);
    struct xdg_toplevel *toplevel = xdg_surface_get_toplevel(xdg);
    xdg_toplevel_add_listener(toplevel, &toplevel_listener, NULL);
    xdg_toplevel_set_app_id(toplevel, APP_ID);
    wl_surface_commit(surface);
    while (!configured && wl_display_dispatch(display) >= 0) {}
    const int width = 640, height = 480, stride = width * 4, size = stride * height;
    int fd = memfd_create("first-window", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, size) < 0) return 1;
    void *pixels = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    memset(pixels, 0xff, size);
#ifdef WITH_TEXT
    // What a scene's first frame has that a white rectangle has not: a heading and a line of
    // text, laid out with pango (fontconfig's configuration and the faces loaded first).
    cairo_surface_t *target = cairo_image_surface_create_for_data(pixels, CAIRO_FORMAT_ARGB32, width, height, stride);
    cairo_t *cr = cairo_create(target);
    const char *lines[][2] = {{"Sans Bold 13", "Notes"}, {"Sans 13", "A line of text, as a note shows it."}};
    for (int i = 0; i < 2; i++) {
        PangoLayout *layout = pango_cairo_create_layout(cr);
        PangoFontDescription *font = pango_font_description_from_string(lines[i][0]);
        pango_layout_set_font_description(layout, font);
        pango_font_description_free(font);
        pango_layout_set_text(layout, lines[i][1], -1);
        cairo_set_source_rgb(cr, 0.13, 0.13, 0.13);
        cairo_move_to(cr, 16, 10 + 40 * i);
        pango_cairo_show_layout(cr, layout);
        g_object_unref(layout);
    }
    cairo_destroy(cr);
    cairo_surface_flush(target);
    cairo_surface_destroy(target);
#endif
    struct wl_shm_pool *pool = wl_shm_create_pool(shm, fd, size);
    struct wl_buffer *buffer = wl_shm_pool_create_buffer(pool, 0, width, height, stride, WL_SHM_FORMAT_ARGB8888);
    wl_surface_attach(surface, buffer, 0, 0);
    wl_surface_damage(surface, 0, 0, width, height);
    wl_surface_commit(surface);
    while (wl_display_dispatch(display) >= 0) {}
    return 0;
}
