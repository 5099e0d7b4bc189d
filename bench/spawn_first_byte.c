/* Baseline: how long a process takes from posix_spawn until the first byte it writes on an
 * inherited socket (fd 3), as the broker spawns workers. Prints the p50 in milliseconds.
 * Usage: spawn_first_byte COUNT EXECUTABLE [ARGUMENT...] */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[1]);
    double *samples = calloc((size_t)n, sizeof *samples);
    for (int i = 0; i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 1;
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
        char **child_argv = argv + 2; /* the program and its arguments */
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t pid;
        if (posix_spawn(&pid, argv[2], &actions, NULL, child_argv, environ) != 0) return 1;
        close(sv[1]);
        char byte;
        if (read(sv[0], &byte, 1) != 1) return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        samples[i] = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
        close(sv[0]);
        waitpid(pid, NULL, 0);
        posix_spawn_file_actions_destroy(&actions);
    }
    printf("%.2f\n", median(samples, n));
    return 0;
}
