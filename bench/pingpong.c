/* Baseline: a framed request/reply over a Unix stream socket pair between two processes,
 * the floor for any local IPC round trip (4-byte length + 16-byte payload each way).
 * Prints the p50 round trip in microseconds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int full(int fd, void *buf, size_t n, int writing) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = writing ? write(fd, (char *)buf + done, n - done) : read(fd, (char *)buf + done, n - done);
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        unsigned char frame[20];
        while (full(sv[1], frame, sizeof frame, 0) == 0) full(sv[1], frame, sizeof frame, 1);
        _exit(0);
    }
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
    qsort(samples, (size_t)n, sizeof *samples, cmp);
    printf("%.1f\n", samples[n / 2]);
    return 0;
}
