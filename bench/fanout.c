/* Baseline for update fan-out: one process writes a framed update (4-byte length + 64-byte
 * payload) to each of N processes over its own Unix stream socket, then reads their N framed
 * acknowledgements; the time until the last one arrives is one sample. Each receiver blocks
 * in read, as a scene waits for its broker. Prints the p50 in microseconds.
 * Given PAUSE_US (microseconds), the sender sleeps that long before each round: the machine idles between two
 * rounds as it does between two `wmctl post` processes, whose start and exit leave the CPUs
 * idle or busy elsewhere (back to back, every process stays warm and on its CPU).
 * Usage: fanout RECEIVERS ROUNDS [PAUSE_US] */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv) {
    int receivers = argc > 1 ? atoi(argv[1]) : 10;
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    int pause = argc > 3 ? atoi(argv[3]) : 0;
    int *fds = calloc((size_t)receivers, sizeof *fds);
    pid_t *pids = calloc((size_t)receivers, sizeof *pids);
    for (int r = 0; r < receivers; r++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 1;
        pids[r] = fork();
        if (pids[r] == 0) {
            close(sv[0]);
            unsigned char update[68], ack[8] = {0, 0, 0, 4};
            while (full(sv[1], update, sizeof update, 0) == 0) full(sv[1], ack, sizeof ack, 1);
            _exit(0);
        }
        close(sv[1]);
        fds[r] = sv[0];
    }
    double *samples = calloc((size_t)rounds, sizeof *samples);
    unsigned char update[68] = {0, 0, 0, 64}, ack[8];
    struct pollfd *waiting = calloc((size_t)receivers, sizeof *waiting);
    for (int i = 0; i < rounds; i++) {
        if (pause > 0) usleep((useconds_t)pause);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int r = 0; r < receivers; r++) full(fds[r], update, sizeof update, 1);
        /* The acknowledgements in the order they come, as a broker's event loop reads them. */
        int left = receivers;
        for (int r = 0; r < receivers; r++) waiting[r] = (struct pollfd){.fd = fds[r], .events = POLLIN};
        while (left > 0) {
            if (poll(waiting, (nfds_t)receivers, -1) < 0) return 1;
            for (int r = 0; r < receivers; r++) {
                if (waiting[r].fd >= 0 && (waiting[r].revents & POLLIN)) {
                    if (full(fds[r], ack, sizeof ack, 0) != 0) return 1;
                    waiting[r].fd = -1;
                    left--;
                }
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        samples[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    }
    for (int r = 0; r < receivers; r++) close(fds[r]);
    for (int r = 0; r < receivers; r++) waitpid(pids[r], NULL, 0);
    printf("%.1f\n", median(samples, rounds));
    return 0;
}
