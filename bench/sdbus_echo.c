/* Baseline: a D-Bus method call through a dbus-daemon, with sd-bus on both ends.
 *   sdbus_echo server ADDRESS       serves org.windowbroker.Bench.Echo(s) -> s
 *   sdbus_echo client ADDRESS COUNT prints the p50 call round trip in microseconds
 * And the same client against the broker's D-Bus face (org.windowbroker.Broker1):
 *   sdbus_echo state ADDRESS COUNT PATH     p50 of reading a session's State property
 *   sdbus_echo activate ADDRESS COUNT PATH  p50 of Session1.Activate on a session in front */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#include "bench.h"

static int echo(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    const char *text;
    int r = sd_bus_message_read(m, "s", &text);
    if (r < 0) return r;
    return sd_bus_reply_method_return(m, "s", text);
}

static const sd_bus_vtable vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Echo", "s", "s", echo, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END,
};

static sd_bus *open_bus(const char *address) {
    sd_bus *bus = NULL;
    if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 || sd_bus_start(bus) < 0) {
        fprintf(stderr, "cannot connect to %s\n", address);
        exit(1);
    }
    return bus;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    sd_bus *bus = open_bus(argv[2]);
    if (strcmp(argv[1], "server") == 0) {
        sd_bus_slot *slot = NULL;
        if (sd_bus_add_object_vtable(bus, &slot, "/bench", "org.windowbroker.Bench", vtable, NULL) < 0) return 1;
        if (sd_bus_request_name(bus, "org.windowbroker.Bench", 0) < 0) return 1;
        printf("ready\n");
        fflush(stdout);
        for (;;) {
            int r = sd_bus_process(bus, NULL);
            if (r < 0) return 1;
            if (r > 0) continue;
            if (sd_bus_wait(bus, (uint64_t)-1) < 0) return 1;
        }
    }
    int n = argc > 3 ? atoi(argv[3]) : 2000;
    const char *path = argc > 4 ? argv[4] : "/";
    double *samples = calloc((size_t)n, sizeof *samples);
    for (int i = 0; i < n; i++) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        struct timespec a, b;
        int r;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (strcmp(argv[1], "state") == 0) {
            r = sd_bus_call_method(bus, "org.windowbroker.Broker1", path, "org.freedesktop.DBus.Properties", "Get",
                                   &error, &reply, "ss", "org.windowbroker.Session1", "State");
        } else if (strcmp(argv[1], "activate") == 0) {
            r = sd_bus_call_method(bus, "org.windowbroker.Broker1", path, "org.windowbroker.Session1", "Activate",
                                   &error, &reply, "");
        } else {
            r = sd_bus_call_method(bus, "org.windowbroker.Bench", "/bench", "org.windowbroker.Bench", "Echo",
                                   &error, &reply, "s", "0123456789abcdef");
        }
        if (r < 0) {
            fprintf(stderr, "call failed: %s\n", error.message ? error.message : "?");
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        sd_bus_message_unref(reply);
        samples[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    }
    printf("%.1f\n", median(samples, n));
    return 0;
}
