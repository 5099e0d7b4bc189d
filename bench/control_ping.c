/* The broker's own share of a control round trip: a C client that speaks the wire protocol
 * (4-byte big-endian length + protobuf Envelope, encoded by hand below) sends Hello, then N
 * pings over one connection. Beside `wmctl ping` it separates the broker from the Swift
 * client. Usage: control_ping SOCKET COUNT. Prints the p50 in microseconds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Reads one frame into buf (at most cap bytes); returns its length or -1. */
static int read_frame(int fd, unsigned char *buf, size_t cap) {
    unsigned char h[4];
    if (full(fd, h, 4, 0) != 0) return -1;
    uint32_t n = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (n > cap || full(fd, buf, n, 0) != 0) return -1;
    return (int)n;
}

/* IPCWire's WireProtocol.version: a broker refuses any other. */
#define PROTOCOL_VERSION 2

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[2]);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) { perror("connect"); return 1; }
    /* Envelope{id: 1, hello: {protocol_version: PROTOCOL_VERSION, peer_kind: CONTROL}} */
    unsigned char hello[] = {0, 0, 0, 8, 0x08, 0x01, 0x52, 0x04, 0x08, PROTOCOL_VERSION, 0x10, 0x01};
    unsigned char reply[4096];
    int length = 0;
    if (full(fd, hello, sizeof hello, 1) != 0 || (length = read_frame(fd, reply, sizeof reply)) < 0) return 1;
    /* Envelope{id?, reply_to: 1, welcome: {...}}: past the varint fields 1 and 2, a Welcome (field 11) */
    int at = 0;
    while (at < length && (reply[at] == 0x08 || reply[at] == 0x10)) {
        at++;
        while (at < length && (reply[at] & 0x80)) at++;
        at++;
    }
    if (at >= length || reply[at] != 0x5A) {
        fprintf(stderr, "control_ping: the broker did not welcome protocol %d (bench/control_ping.c must speak WireProtocol.version)\n", PROTOCOL_VERSION);
        return 1;
    }
    /* Envelope{id: 2, control_request: {ping: {payload: 16 bytes}}} */
    unsigned char ping[4 + 25] = {0, 0, 0, 25, 0x08, 0x02, 0xA2, 0x01, 20, 0x62, 18, 0x0A, 16};
    memset(ping + 4 + 9, 'x', 16);
    double *samples = calloc((size_t)n, sizeof *samples);
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (full(fd, ping, sizeof ping, 1) != 0 || read_frame(fd, reply, sizeof reply) < 0) return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        samples[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    }
    close(fd);
    printf("%.1f\n", median(samples, n));
    return 0;
}
