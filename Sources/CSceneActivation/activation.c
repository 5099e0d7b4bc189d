// See include/scene_activation.h.
#include "scene_activation.h"
#include "xdg-activation-v1-client-protocol.h"

#include <stdlib.h>
#include <string.h>
#include <wayland-client.h>

static struct wl_display *bound_display;
static struct wl_event_queue *queue;
static struct xdg_activation_v1 *activation;

static void global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    (void)data;
    (void)version;
    if (!activation && strcmp(interface, xdg_activation_v1_interface.name) == 0) {
        activation = wl_registry_bind(registry, name, &xdg_activation_v1_interface, 1);
    }
}

static void global_remove(void *data, struct wl_registry *registry, uint32_t name) {
    (void)data;
    (void)registry;
    (void)name;
}

static const struct wl_registry_listener registry_listener = { global, global_remove };

/// Binds xdg-activation on a queue of this file's own, once per connection, so that GTK's
/// dispatch never sees these objects' events.
static int bind_activation(struct wl_display *display) {
    if (bound_display == display) return activation != NULL;
    bound_display = display;
    queue = wl_display_create_queue(display);
    struct wl_display *wrapper = wl_proxy_create_wrapper(display);
    if (!queue || !wrapper) return 0;
    wl_proxy_set_queue((struct wl_proxy *)wrapper, queue);
    struct wl_registry *registry = wl_display_get_registry(wrapper);
    wl_proxy_wrapper_destroy(wrapper);
    wl_registry_add_listener(registry, &registry_listener, NULL);
    wl_display_roundtrip_queue(display, queue);
    wl_registry_destroy(registry);
    return activation != NULL;
}

static void token_done(void *data, struct xdg_activation_token_v1 *token, const char *text) {
    (void)token;
    char **received = data;
    *received = strdup(text);
}

static const struct xdg_activation_token_v1_listener token_listener = { token_done };

int wb_activate_surface(struct wl_display *display, struct wl_surface *surface, const char *app_id, const char *token) {
    if (!display || !surface || !bind_activation(display)) return 0;
    if (token && *token) {
        xdg_activation_v1_activate(activation, token, surface);
    } else {
        char *received = NULL;
        struct xdg_activation_token_v1 *request = xdg_activation_v1_get_activation_token(activation);
        xdg_activation_token_v1_add_listener(request, &token_listener, &received);
        if (app_id && *app_id) xdg_activation_token_v1_set_app_id(request, app_id);
        xdg_activation_token_v1_set_surface(request, surface);
        xdg_activation_token_v1_commit(request);
        while (!received && wl_display_roundtrip_queue(display, queue) >= 0) {}
        xdg_activation_token_v1_destroy(request);
        if (!received) return 0;
        xdg_activation_v1_activate(activation, received, surface);
        free(received);
    }
    wl_display_flush(display);
    return 1;
}
