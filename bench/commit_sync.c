/* Baseline for what an acknowledged write costs on disk: one page appended to a file in the
 * given directory (where the bench's broker keeps its store), then fdatasync, as SQLite's WAL
 * commit does at synchronous=FULL. Prints the p50 in milliseconds.
 * Usage: commit_sync DIRECTORY COUNT */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench.h"

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[2]);
    char path[4096];
    snprintf(path, sizeof path, "%s/commit_sync.data", argv[1]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return 1;
    char page[4096];
    memset(page, 'x', sizeof page);
    double *samples = calloc((size_t)n, sizeof *samples);
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (full(fd, page, sizeof page, 1) != 0 || fdatasync(fd) != 0) return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        samples[i] = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    }
    close(fd);
    unlink(path);
    printf("%.2f\n", median(samples, n));
    return 0;
}
