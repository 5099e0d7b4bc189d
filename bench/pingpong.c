/* Baseline: a framed request/reply over a Unix stream socket pair between two processes,
 * the floor for any local IPC round trip (4-byte length + 16-byte payload each way).
 * Prints the p50 round trip in microseconds.
 *
 *     pingpong [COUNT [CPU CPU]]
 *
 * With two CPUs the parent (the client) is held on the first and the child on the second,
 * so that every wake-up crosses CPUs; without them the scheduler places both, and usually
 * keeps them on one CPU. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Holds the calling process on `cpu`; exits when the machine has no such CPU. */
static void hold_on(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        _exit(1);
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    int pinned = argc > 3;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
        if (pinned) hold_on(atoi(argv[3]));
        close(sv[0]);
        unsigned char frame[20];
        while (full(sv[1], frame, sizeof frame, 0) == 0) full(sv[1], frame, sizeof frame, 1);
        _exit(0);
    }
    if (pinned) hold_on(atoi(argv[2]));
    close(sv[1]);
    double *samples = calloc((size_t)n, sizeof *samples);
    unsigned char frame[20] = {0, 0, 0, 16};
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        full(sv[0], frame, sizeof frame, 1);
        full(sv[0], frame, sizeof frame, 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        samples[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    }
    close(sv[0]);
    waitpid(pid, NULL, 0);
    printf("%.1f\n", median(samples, n));
    return 0;
}
