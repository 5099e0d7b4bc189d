// Loads libwindowbroker-drawing.so on first use and forwards system_surface.h's functions to it (drawing_library.h says why it is not linked in).
#define _GNU_SOURCE
#include "drawing_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WB_STRINGIFY(name) #name
#define WB_SYMBOL_NAME(name) WB_STRINGIFY(name)

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const wb_drawing_table *table;
static char load_error[1024];

/// Adds a reason to `load_error`, after the ones before it.
__attribute__((format(printf, 1, 2))) static void add_load_error(const char *format, ...) {
    size_t used = strlen(load_error);
    if (used && used + 2 < sizeof load_error) {
        strcpy(load_error + used, "; ");
        used += 2;
    }
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(load_error + used, sizeof load_error - used, format, arguments);
    va_end(arguments);
}

/// Tries `path`; on failure adds what the loader said to `load_error`.
static int try_load(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        add_load_error("%s", dlerror());
        return 0;
    }
    const wb_drawing_table *(*entry)(void) = (const wb_drawing_table *(*)(void))dlsym(library, WB_SYMBOL_NAME(WB_DRAWING_TABLE_SYMBOL));
    if (!entry) {
        add_load_error("%s has no %s (another version of windowbroker?)", path, WB_SYMBOL_NAME(WB_DRAWING_TABLE_SYMBOL));
        dlclose(library);
        return 0;
    }
    table = entry();
    return 1;
}

static void load(void) {
    const char *named = getenv("WINDOWBROKER_DRAWING_LIBRARY");
    if (named && *named && try_load(named)) return;
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length > 0) {
        path[length] = 0;
        char *slash = strrchr(path, '/');
        if (slash && (size_t)(slash + 1 - path) + sizeof WB_DRAWING_LIBRARY_FILE <= sizeof path) {
            strcpy(slash + 1, WB_DRAWING_LIBRARY_FILE);
            if (try_load(path)) return;
        }
    }
    size_t used = strlen(load_error);
    snprintf(load_error + used, sizeof load_error - used,
             " (the windows need " WB_DRAWING_LIBRARY_FILE ": beside the program, or named by WINDOWBROKER_DRAWING_LIBRARY)");
}

int wb_drawing_load(char *error, int error_size) {
    pthread_once(&load_once, load);
    if (!table && error && error_size > 0) snprintf(error, (size_t)error_size, "%s", load_error);
    return table != NULL;
}

static void *preload(void *unused) {
    (void)unused;
    if (!wb_drawing_load(NULL, 0)) return NULL;
    table->sw_prepare_fonts();
    return NULL;
}

static pthread_once_t preload_once = PTHREAD_ONCE_INIT;

static void start_preload(void) {
    pthread_attr_t attributes;
    pthread_t thread;
    if (pthread_attr_init(&attributes) != 0) return;
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_create(&thread, &attributes, preload, NULL);  // on failure, the first call loads it
    pthread_attr_destroy(&attributes);
}

void wb_drawing_preload(void) {
    pthread_once(&preload_once, start_preload);
}

// The forwarders. Those taking a surface run only after an open succeeded, so the
// table is there; the others load the library first.

ss_surface *ss_open(const char *name_space, int32_t keyboard, ss_callbacks callbacks, char *error, int error_size) {
    if (!wb_drawing_load(error, error_size)) return NULL;
    return table->ss_open(name_space, keyboard, callbacks, error, error_size);
}
int ss_fd(ss_surface *surface) { return table->ss_fd(surface); }
int ss_dispatch(ss_surface *surface) { return table->ss_dispatch(surface); }
void ss_close(ss_surface *surface) { table->ss_close(surface); }
ss_picture *ss_picture_from_png(const uint8_t *bytes, size_t length) {
    if (!wb_drawing_load(NULL, 0)) return NULL;
    return table->ss_picture_from_png(bytes, length);
}
void ss_picture_free(ss_picture *picture) {
    if (picture) table->ss_picture_free(picture);
}
void ss_draw_cards(ss_surface *surface, const char *heading, const char *hint, const ss_card *cards, int32_t count, int32_t selected) {
    table->ss_draw_cards(surface, heading, hint, cards, count, selected);
}
int32_t ss_item_at(ss_surface *surface, double x, double y) { return table->ss_item_at(surface, x, y); }
int32_t ss_item_frame(ss_surface *surface, int32_t index, int32_t frame[4]) { return table->ss_item_frame(surface, index, frame); }
void ss_draw_rows(ss_surface *surface, const char *heading, const ss_row *rows, int32_t count, int32_t selected) {
    table->ss_draw_rows(surface, heading, rows, count, selected);
}
