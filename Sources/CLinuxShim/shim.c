#include "CLinuxShim.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int wb_spawn_worker(const char *path, char *const argv[], char *const envp[], int child_fd, int output_fd, int error_fd, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) { posix_spawn_file_actions_destroy(&actions); return rc; }

    // dup2 onto the same number clears FD_CLOEXEC only when the numbers differ, so the
    // broker always hands a descriptor above 3 (socketpair fds are CLOEXEC).
    if (child_fd == 3) { rc = EINVAL; goto out; }
    if ((rc = posix_spawn_file_actions_adddup2(&actions, child_fd, 3)) != 0) goto out;
    if (output_fd >= 0 && error_fd >= 0) {
        // The worker's output goes to the broker, which logs it under the scene's session,
        // each stream at its own priority.
        if (output_fd <= 3 || error_fd <= 3) { rc = EINVAL; goto out; }
        if ((rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) != 0) goto out;
        if ((rc = posix_spawn_file_actions_adddup2(&actions, output_fd, 1)) != 0) goto out;
        if ((rc = posix_spawn_file_actions_adddup2(&actions, error_fd, 2)) != 0) goto out;
    }
    if ((rc = posix_spawn_file_actions_addclosefrom_np(&actions, 4)) != 0) goto out;

    sigset_t empty, all;
    sigemptyset(&empty);
    sigfillset(&all);
    if ((rc = posix_spawnattr_setsigmask(&attr, &empty)) != 0) goto out;
    if ((rc = posix_spawnattr_setsigdefault(&attr, &all)) != 0) goto out;
    if ((rc = posix_spawnattr_setpgroup(&attr, 0)) != 0) goto out;
    if ((rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)) != 0) goto out;

    rc = posix_spawn(pid, path, &actions, &attr, argv, envp);
out:
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    return rc;
}

int wb_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int wb_pidfd_try_reap(int pidfd, int *exited_code, int *signal) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) != 0) return -1;
    if (info.si_pid == 0) return 0;
    *exited_code = -1;
    *signal = -1;
    if (info.si_code == CLD_EXITED) *exited_code = info.si_status;
    else *signal = info.si_status;
    return 1;
}

int wb_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0);
}

int wb_sol_socket(void) { return SOL_SOCKET; }
int wb_so_peercred(void) { return SO_PEERCRED; }
int wb_sock_stream(void) { return SOCK_STREAM; }
int wb_sock_cloexec(void) { return SOCK_CLOEXEC; }

_Static_assert(sizeof(struct wb_ucred) == sizeof(struct ucred), "wb_ucred must match struct ucred");

int wb_enable_passcred(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
}

long wb_recv_with_pid(int fd, void *buffer, unsigned long length, pid_t *pid) {
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    union { struct cmsghdr align; char data[CMSG_SPACE(sizeof(struct ucred))]; } control;
    struct msghdr message = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.data, .msg_controllen = sizeof control.data,
    };
    ssize_t n = recvmsg(fd, &message, 0);
    if (n < 0) return -1;
    *pid = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
            struct ucred cred;
            memcpy(&cred, CMSG_DATA(c), sizeof cred);
            *pid = cred.pid;
        }
    }
    return (long)n;
}

int wb_is_procfs(const char *path) {
    struct statfs fs;
    return statfs(path, &fs) == 0 && fs.f_type == 0x9fa0 /* PROC_SUPER_MAGIC */;
}

void wb_line_buffer_stdout(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}

extern void *swift_task_enqueueGlobal_hook;

void **wb_concurrency_enqueue_global_hook(void) {
    return &swift_task_enqueueGlobal_hook;
}

int _dispatch_get_main_queue_handle_4CF(void);
void _dispatch_main_queue_callback_4CF(void *msg);

int wb_main_queue_eventfd(void) {
    // Dispatch's handle is an eventfd: try one of our own first, as asking for Dispatch's
    // binds the main queue for good.
    int probe = eventfd(0, EFD_CLOEXEC);
    if (probe < 0) return -1;
    struct stat info;
    int usable = fstat(probe, &info) == 0 && !S_ISREG(info.st_mode);
    close(probe);
    return usable ? _dispatch_get_main_queue_handle_4CF() : -1;
}

void wb_main_queue_drain(void) {
    _dispatch_main_queue_callback_4CF(NULL);
}

int wb_is_main_thread(void) {
    return syscall(SYS_gettid) == getpid();
}

int wb_hold_on_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

int wb_trim_heap(void) {
    return malloc_trim(0);
}

int wb_seqpacket_pair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

/// Waits for `fd` to be readable; 0, ETIMEDOUT or an errno value.
static int wait_readable(int fd, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    for (;;) {
        int rc = poll(&p, 1, timeout_ms);
        if (rc > 0) return 0;
        if (rc == 0) return ETIMEDOUT;
        if (errno != EINTR) return errno;
    }
}

int wb_zygote_first_message(int channel, int timeout_ms, char *message, unsigned long capacity) {
    if (capacity == 0) return EINVAL;
    int rc = wait_readable(channel, timeout_ms);
    if (rc != 0) return rc;
    ssize_t n = recv(channel, message, capacity - 1, 0);
    if (n < 0) return errno;
    if (n == 0) return EPIPE;
    message[n] = '\0';
    return 0;
}

int wb_zygote_request(int channel, const char *environment, unsigned long length, int fd3, int output_fd, int error_fd, int *reply_fd) {
    // Each request brings its own reply socket: requests from several threads never take
    // each other's answers, and no lock is needed around the channel.
    int reply[2];
    if (wb_seqpacket_pair(reply) != 0) return errno;
    int fds[4] = { reply[1], fd3, output_fd, error_fd };
    int count = (output_fd >= 0 && error_fd >= 0) ? 4 : 2;
    union { struct cmsghdr align; char data[CMSG_SPACE(sizeof fds)]; } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = { .iov_base = (void *)environment, .iov_len = length };
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.data, .msg_controllen = CMSG_SPACE(sizeof(int) * count) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * count);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * count);
    // Never waits: the caller is an event loop, and a zygote whose queue is full has stopped
    // reading (its scenes are spawned instead).
    ssize_t sent;
    do { sent = sendmsg(channel, &message, MSG_NOSIGNAL | MSG_DONTWAIT); } while (sent < 0 && errno == EINTR);
    int rc = sent < 0 ? (errno == ECONNRESET || errno == ENOTCONN ? EPIPE : errno) : 0;
    close(reply[1]);
    if (rc != 0) close(reply[0]);
    else *reply_fd = reply[0];
    return rc;
}

/* sched_setattr(2)'s argument (its first version); glibc has no wrapper or declaration. */
#define SCHED_FLAG_RESET_ON_FORK_BIT 0x01
struct wb_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};

/* The calling thread's attributes, as sched_setattr takes them back. */
static int wb_read_sched_attr(struct wb_sched_attr *attr) {
    memset(attr, 0, sizeof *attr);
    attr->size = sizeof *attr;
    return syscall(SYS_sched_getattr, 0, attr, sizeof *attr, 0) == 0 ? 0 : errno;
}

/* Only the slice and the reset-on-fork flag change: policy and nice are read back and written
 * unchanged, so a thread that was given a policy or a nice value by its parent keeps them. */
int wb_set_thread_slice(uint64_t nanoseconds, int reset_on_fork) {
    struct wb_sched_attr attr;
    int error = wb_read_sched_attr(&attr);
    if (error != 0) return error;
    if (attr.sched_policy != SCHED_OTHER) return EINVAL;
    attr.sched_flags = reset_on_fork ? SCHED_FLAG_RESET_ON_FORK_BIT : 0;
    attr.sched_runtime = nanoseconds;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}

uint64_t wb_thread_slice(void) {
    struct wb_sched_attr attr;
    return wb_read_sched_attr(&attr) == 0 ? attr.sched_runtime : 0;
}
