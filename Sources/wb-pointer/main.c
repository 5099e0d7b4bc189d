// wb-pointer: a pointer for tests on a headless compositor, which has none. It moves, clicks
// and drags with a virtual pointer (zwlr_virtual_pointer_v1, which sway offers), in output
// coordinates, the way a hand would: press, move in steps, release.
//
//   wb-pointer [--size WxH] move X Y
//   wb-pointer [--size WxH] click X Y
//   wb-pointer [--size WxH] drag X1 Y1 X2 Y2
//
// --size is the output's size (default 1280x720): absolute motion is relative to it.
#define _GNU_SOURCE
#include "wlr-virtual-pointer-unstable-v1-client-protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wayland-client.h>

enum { BUTTON_LEFT = 0x110, RELEASED = 0, PRESSED = 1 };

static struct wl_seat *seat;
static struct zwlr_virtual_pointer_manager_v1 *manager;
static struct wl_display *display;
static struct zwlr_virtual_pointer_v1 *pointer;
static uint32_t width = 1280, height = 720;

static void global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    if (strcmp(interface, wl_seat_interface.name) == 0 && !seat) {
        seat = wl_registry_bind(registry, name, &wl_seat_interface, 1);
    } else if (strcmp(interface, zwlr_virtual_pointer_manager_v1_interface.name) == 0) {
        manager = wl_registry_bind(registry, name, &zwlr_virtual_pointer_manager_v1_interface, 1);
    }
}

static void global_remove(void *data, struct wl_registry *registry, uint32_t name) {}

static const struct wl_registry_listener registry_listener = { global, global_remove };

static uint32_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint32_t)(t.tv_sec * 1000 + t.tv_nsec / 1000000);
}

static void pause_ms(int ms) {
    wl_display_roundtrip(display);
    usleep((useconds_t)ms * 1000);
}

static void move_to(double x, double y) {
    zwlr_virtual_pointer_v1_motion_absolute(pointer, now_ms(), (uint32_t)x, (uint32_t)y, width, height);
    zwlr_virtual_pointer_v1_frame(pointer);
}

static void button(uint32_t state) {
    zwlr_virtual_pointer_v1_button(pointer, now_ms(), BUTTON_LEFT, state);
    zwlr_virtual_pointer_v1_frame(pointer);
}

static int usage(void) {
    fprintf(stderr, "usage: wb-pointer [--size WxH] move X Y | click X Y | drag X1 Y1 X2 Y2\n");
    return 64;
}

int main(int argc, char **argv) {
    int arg = 1;
    if (arg + 1 < argc && strcmp(argv[arg], "--size") == 0) {
        if (sscanf(argv[arg + 1], "%ux%u", &width, &height) != 2) return usage();
        arg += 2;
    }
    if (arg >= argc) return usage();
    const char *verb = argv[arg++];
    int needed = strcmp(verb, "drag") == 0 ? 4 : 2;
    if (argc - arg != needed || (strcmp(verb, "move") && strcmp(verb, "click") && strcmp(verb, "drag"))) return usage();
    double v[4];
    for (int i = 0; i < needed; i++) v[i] = atof(argv[arg + i]);

    display = wl_display_connect(NULL);
    if (!display) {
        fprintf(stderr, "wb-pointer: cannot connect to the compositor (WAYLAND_DISPLAY)\n");
        return 1;
    }
    struct wl_registry *registry = wl_display_get_registry(display);
    wl_registry_add_listener(registry, &registry_listener, NULL);
    wl_display_roundtrip(display);
    if (!manager) {
        fprintf(stderr, "wb-pointer: the compositor offers no zwlr_virtual_pointer_manager_v1\n");
        return 1;
    }
    pointer = zwlr_virtual_pointer_manager_v1_create_virtual_pointer(manager, seat);
    // The seat has a pointer from now on: give clients a moment to bind it.
    pause_ms(300);
    move_to(v[0], v[1]);
    pause_ms(100);
    if (strcmp(verb, "click") == 0) {
        button(PRESSED);
        pause_ms(50);
        button(RELEASED);
    } else if (strcmp(verb, "drag") == 0) {
        button(PRESSED);
        pause_ms(150);
        const int steps = 20;
        for (int i = 1; i <= steps; i++) {
            move_to(v[0] + (v[2] - v[0]) * i / steps, v[1] + (v[3] - v[1]) * i / steps);
            pause_ms(25);
        }
        pause_ms(150);
        button(RELEASED);
    }
    pause_ms(300);
    zwlr_virtual_pointer_v1_destroy(pointer);
    zwlr_virtual_pointer_manager_v1_destroy(manager);
    wl_display_roundtrip(display);
    wl_display_disconnect(display);
    return 0;
}
