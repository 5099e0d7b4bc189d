/* A whole command, as a shell runs it: posix_spawn until waitpid returns, its output to
 * /dev/null. Prints the p50 in milliseconds. Usage: spawn_exit COUNT EXECUTABLE [ARGS...] */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[1]);
    double *samples = calloc((size_t)n, sizeof *samples);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t pid;
        if (posix_spawn(&pid, argv[2], &actions, NULL, argv + 2, environ) != 0) return 1;
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "spawn_exit: %s failed\n", argv[2]);
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        samples[i] = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    }
    printf("%.2f\n", median(samples, n));
    return 0;
}
