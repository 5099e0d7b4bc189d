// A scene app's process as its own zygote (Android's model): started by the broker with
// WINDOWBROKER_ZYGOTE=1 and a SOCK_SEQPACKET channel on fd 3, the process starts as any worker
// does (the Swift runtime, Dispatch and the app's own top-level code), runs the SDK's share
// of an open once (`wb_zygote_serve`'s caller warms the runtime's caches), and from then on
// only forks. Each child returns from `wb_zygote_serve` and goes on as an ordinary worker. It
// inherits what costs every exec'd worker the most: the loaded, relocated program (its
// relocated data stays shared, copy-on-write, across all of the app's scenes), initialised
// libraries, and the type metadata and protocol conformances the runtime had to build and
// look up the first time (each built once per app instead of once per scene).
//
// That is safe because the zygote never has a second thread: the check below refuses to fork
// otherwise (Dispatch's pool, NIO's loops and GTK are started only after the fork, in the
// child; GTK cannot be forked once it has connected to the display). The one piece of thread-bound state left is Dispatch's:
// it caches the thread's id and binds its main queue to it, and its locks are
// priority-inheriting futexes the kernel unlocks only for that id. The child refreshes both
// through Dispatch's own fork handlers, as a fork() with pthread_atfork would. (A first
// version forked in the constructor below, before the runtime started: every scene then paid
// the runtime's first use itself.)
//
// The children are the broker's, not the zygote's (CLONE_PARENT): the broker reaps and
// supervises them exactly as the workers it spawns, and a worker's parent-death signal is
// tied to the broker. CLONE_PARENT has no libc wrapper, so the clone below does what glibc's
// _Fork does around its own: the kernel writes the child's thread id into the thread
// descriptor (found through the descriptor glibc exports for debuggers) and the child
// registers its robust-mutex list again.
//
// Wire format on the channel (one message each, SOCK_SEQPACKET keeps their boundaries):
//   zygote -> broker, once:  "ready" | "refused: <reason>" (never) | "failed: <reason>" (this time)
//   broker -> zygote:        the worker's environment, NUL-separated "KEY=VALUE" strings,
//                            with SCM_RIGHTS [reply socket, worker socket (-> fd 3),
//                            stdout, stderr] (stdout and stderr together or not at all)
//   zygote -> reply socket:  the child's pid (int32), or -errno
#define _GNU_SOURCE
#include "CSceneZygote.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ZYGOTE_CHANNEL 3
#define MAX_ENVIRONMENT (256 * 1024)
#define MAX_DESCRIPTORS 4

extern char **environ;

// Dispatch's fork handlers (exported), and the call that reads the thread's id into its
// thread-local state again (global in the static library; a shared libdispatch keeps it to
// itself, and such a build is refused before it matters).
void dispatch_atfork_prepare(void);
void dispatch_atfork_parent(void);
void dispatch_atfork_child(void);
extern void libdispatch_tsd_init(void) __attribute__((weak));
// Set (bit 0) once Dispatch has started a thread of its own: a child of such a process may not
// use Dispatch at all (its fork handler poisons it), so the zygote must not fork then.
extern unsigned char _dispatch_unsafe_fork __attribute__((weak));

/// Set by the constructor in a process started as a zygote; `wb_zygote_serve` forks then.
static int serving;
static char *environment;

static void say(const char *message) {
    (void)send(ZYGOTE_CHANNEL, message, strlen(message), MSG_NOSIGNAL);
}

/// Tells the broker why there is no zygote ("refused": this build never can be one) and ends.
static void end_saying(const char *verdict, const char *why) {
    char message[512];
    snprintf(message, sizeof message, "%s: %s", verdict, why);
    say(message);
    _exit(0);
}

/// What a fork of this (only) thread must hand the child as glibc's _Fork does: where glibc
/// keeps the thread's id, and its robust-mutex list. Found once; the zygote forks from here on.
static struct {
    pid_t *thread_id;
    void *robust_list;
    size_t robust_list_length;
} this_thread;

/// Fills `this_thread`; NULL, or why it cannot be found.
static const char *find_this_thread(void) {
    // glibc describes struct pthread's fields to libthread_db: {bits, count, offset}.
    const uint32_t *tid = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");
    if (!tid) return "the C library does not describe its thread descriptor (not glibc)";
    if (tid[0] != 32 || tid[2] > 4096) return "the C library's thread descriptor is not laid out as expected";
    this_thread.thread_id = (pid_t *)((char *)pthread_self() + tid[2]);
    if (*this_thread.thread_id != (pid_t)syscall(SYS_gettid)) return "the C library's thread id is not where it says";
    if (syscall(SYS_get_robust_list, 0, &this_thread.robust_list, &this_thread.robust_list_length) != 0) {
        return "the kernel does not report this thread's robust-mutex list";
    }
    return NULL;
}

/// Why this process cannot be a zygote, or NULL when it can (then `this_thread` is filled).
static const char *refusal(void) {
#if !defined(__x86_64__) && !defined(__aarch64__)
    return "forking scenes is implemented for x86_64 and aarch64 only";
#endif
    // With a shared Swift runtime (a debug build), Dispatch and the runtime initialised before
    // this constructor, on this thread: a child would inherit Dispatch's record of the
    // zygote's thread id, and Dispatch's priority-inheriting locks tell the kernel that id.
    if (dlopen("libdispatch.so", RTLD_NOLOAD | RTLD_LAZY) || dlopen("libswiftCore.so", RTLD_NOLOAD | RTLD_LAZY)) {
        return "the Swift runtime is a shared library here (built without --static-swift-stdlib), so it started before the zygote could";
    }
    if (!libdispatch_tsd_init) return "this build's Dispatch cannot be told a forked thread's id";
    return find_this_thread();
}

/// fork(2) whose child is the caller's parent's: glibc's _Fork with CLONE_PARENT.
static pid_t fork_as_sibling(void) {
    long pid = syscall(SYS_clone, CLONE_PARENT | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD,
                       NULL, NULL, this_thread.thread_id, NULL);
    if (pid == 0) syscall(SYS_set_robust_list, this_thread.robust_list, this_thread.robust_list_length);
    return (pid_t)pid;
}

/// How many threads this process has (/proc/self/task), or -1.
static int thread_count(void) {
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks) return -1;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(tasks));) if (entry->d_name[0] != '.') count++;
    closedir(tasks);
    return count;
}

/// Whether the broker closed its end of a request's reply socket (it stopped waiting).
static int abandoned(int reply) {
    struct pollfd p = { .fd = reply, .events = POLLIN };
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/// In the child: the received descriptors become 3 (and 1, 2) and are closed where they came,
/// and the environment becomes the one the broker sent.
static void become_worker(char *environment, size_t length, const int *fds, int count) {
    // The worker socket replaces the channel as fd 3.
    dup2(fds[1], ZYGOTE_CHANNEL);
    if (count == 4) {
        dup2(fds[2], STDOUT_FILENO);
        dup2(fds[3], STDERR_FILENO);
    }
    // Only what the request brought: a descriptor a library of the zygote opened stays its.
    for (int i = 0; i < count; i++) close(fds[i]);
    setpgid(0, 0);
    size_t variables = 0;
    for (size_t i = 0; i < length; i++) if (environment[i] == '\0') variables++;
    char **list = calloc(variables + 1, sizeof *list);
    if (!list) _exit(127);
    size_t n = 0;
    for (size_t i = 0; i < length && n < variables; i += strlen(environment + i) + 1) list[n++] = environment + i;
    environ = list;
}

/// Runs before any other constructor: decides whether this process is a zygote while nothing
/// else has started.
__attribute__((constructor(101))) static void zygote_main(void) {
    const char *role = getenv("WINDOWBROKER_ZYGOTE");
    if (!role || strcmp(role, "1") != 0) return;
    int type = 0;
    socklen_t size = sizeof type;
    if (getsockopt(ZYGOTE_CHANNEL, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_SEQPACKET) return;
    // Die with the broker; a zygote never outlives the one that started it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const char *broker = getenv("WINDOWBROKER_PID");
    if (!broker || atoi(broker) != getppid()) _exit(0);

    const char *why = refusal();
    if (why) end_saying("refused", why);
    environment = malloc(MAX_ENVIRONMENT);
    if (!environment) _exit(1);
    serving = 1;
}

int wb_zygote_pending(void) {
    return serving;
}

int wb_zygote_serve(void) {
    if (!serving) return 0;
    serving = 0;
    if (thread_count() != 1) {
        end_saying("failed", "the app started a thread before SceneWorker.run; its scenes are spawned instead");
    }
    if (&_dispatch_unsafe_fork && (_dispatch_unsafe_fork & 1)) {
        end_saying("failed", "Dispatch started a thread before SceneWorker.run; its scenes are spawned instead");
    }
    // Whatever the process wrote is out before the first fork, not repeated by every child.
    fflush(NULL);
    say("ready");

    for (;;) {
        union { struct cmsghdr align; char data[CMSG_SPACE(sizeof(int) * MAX_DESCRIPTORS)]; } control;
        struct iovec iov = { .iov_base = environment, .iov_len = MAX_ENVIRONMENT };
        struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.data, .msg_controllen = sizeof control.data };
        ssize_t n = recvmsg(ZYGOTE_CHANNEL, &message, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(0);  // the broker closed the channel: nothing more to fork
        int fds[MAX_DESCRIPTORS];
        int count = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            int received = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < received; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (count < MAX_DESCRIPTORS) fds[count++] = fd; else close(fd);
            }
        }
        int32_t answer;
        if ((message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (count != 2 && count != 4)
            || environment[n - 1] != '\0') {
            answer = -EINVAL;
        } else if (abandoned(fds[0])) {
            answer = -ECANCELED;  // the broker gave up waiting and started the worker itself
        } else {
            dispatch_atfork_prepare();
            pid_t pid = fork_as_sibling();
            if (pid == 0) {
                // Dispatch reads this thread's new id, then rebinds its main queue to it.
                libdispatch_tsd_init();
                dispatch_atfork_child();
                become_worker(environment, (size_t)n, fds, count);
                return 1;  // on to the worker's start
            }
            dispatch_atfork_parent();
            answer = pid > 0 ? pid : -errno;
        }
        if (count > 0) (void)send(fds[0], &answer, sizeof answer, MSG_NOSIGNAL);
        for (int i = 0; i < count; i++) close(fds[i]);
    }
}
