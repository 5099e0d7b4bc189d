/* What the C baselines share: whole-buffer socket I/O and the median of their samples. */
#ifndef WINDOWBROKER_BENCH_H
#define WINDOWBROKER_BENCH_H
#include <stdlib.h>
#include <unistd.h>

/* Reads or writes exactly n bytes; -1 when the peer is gone. */
static inline int full(int fd, void *buf, size_t n, int writing) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = writing ? write(fd, (char *)buf + done, n - done) : read(fd, (char *)buf + done, n - done);
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

static inline int bench_compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The p50 of n samples (sorts them in place). */
static inline double median(double *samples, int n) {
    qsort(samples, (size_t)n, sizeof *samples, bench_compare);
    return samples[n / 2];
}
#endif
