// CLinuxShim: the few Linux calls Swift's Glibc module does not expose without _GNU_SOURCE
// (posix_spawn_file_actions_addclosefrom_np, pidfd, waitid(P_PIDFD), prctl, SO_PEERCRED).
#ifndef CLINUXSHIM_H
#define CLINUXSHIM_H

#include <stdint.h>
#include <sys/types.h>

/// Spawns `path` with `argv`/`envp`; `child_fd` becomes fd 3 in the child and every other
/// descriptor above 3 is closed. The child gets an empty signal mask, default signal
/// dispositions and its own process group. Returns 0 and sets *pid, or an errno value.
/// output_fd >= 0 becomes the child's stdout, error_fd >= 0 its stderr (stdin is then
/// /dev/null); -1 inherits them.
int wb_spawn_worker(const char *path, char *const argv[], char *const envp[], int child_fd, int output_fd, int error_fd, pid_t *pid);

/// A SOCK_SEQPACKET socket pair (close-on-exec): the channel to an app's zygote.
int wb_seqpacket_pair(int fds[2]);

/// Waits up to `timeout_ms` for a zygote's first message ("ready" or "refused: ..."), copied
/// NUL-terminated into `message`. Returns 0, or an errno value (ETIMEDOUT, EPIPE when the
/// zygote closed the channel or ended).
int wb_zygote_first_message(int channel, int timeout_ms, char *message, unsigned long capacity);

/// Asks the zygote on `channel` for a worker: `environment` (`length` bytes of NUL-terminated
/// "KEY=VALUE" strings) becomes its environment, `fd3` its fd 3, and `output_fd`/`error_fd`
/// (both or neither, -1) its stdout and stderr. The worker is the caller's child. Never blocks:
/// returns 0 and sets *reply_fd, where the zygote answers with one native int32 (the child's
/// pid, or a negated errno value; `ZygoteAnswer` reads it), or an errno value
/// (EPIPE: the zygote is gone; EAGAIN: its queue is full, it stopped reading). The caller
/// keeps (and closes) the descriptors it passed. The zygote forks as soon as it reads this.
int wb_zygote_request(int channel, const char *environment, unsigned long length, int fd3, int output_fd, int error_fd, int *reply_fd);

/// pidfd_open(2); -1 and errno on failure.
int wb_pidfd_open(pid_t pid);

/// Non-blocking waitid(P_PIDFD). Returns 1 and fills *exited_code / *signal (one is -1)
/// when the child has exited, 0 when it is still running, -1 on error.
int wb_pidfd_try_reap(int pidfd, int *exited_code, int *signal);

/// Asks the kernel to send `signal` to this process when its parent dies.
int wb_set_parent_death_signal(int signal);

/// Layout-compatible with `struct ucred` (which needs _GNU_SOURCE), for reading SO_PEERCRED
/// through NIO's SocketOptionProvider.
typedef struct wb_ucred {
    pid_t pid;
    uid_t uid;
    gid_t gid;
} wb_ucred;

/// SOL_SOCKET / SO_PEERCRED / SOCK_STREAM / SOCK_CLOEXEC as plain integers: Glibc's enum for
/// socket types is claimed by whichever C module includes <sys/socket.h> first (libsystemd's).
int wb_sol_socket(void);
int wb_so_peercred(void);
int wb_sock_stream(void);
int wb_sock_cloexec(void);

/// Turns on SO_PASSCRED so each received datagram carries its sender's credentials.
int wb_enable_passcred(int fd);

/// Receives one datagram and the sender's pid (0 when none came with it). Returns its length or -1.
long wb_recv_with_pid(int fd, void *buffer, unsigned long length, pid_t *pid);

/// 1 when `path` lives on procfs (where PSI triggers can be written), 0 otherwise.
int wb_is_procfs(const char *path);

/// Makes stdout line-buffered (setvbuf): a scene's print() reaches the broker as it happens.
/// Swift 6 cannot name C's `stdout` global from concurrent code.
void wb_line_buffer_stdout(void);

/// Gives the heap's free pages back to the system (glibc's malloc_trim): after a start that
/// read every stored session, what only the reading needed would otherwise stay resident.
int wb_trim_heap(void);
/// Asks the scheduler for a slice of `nanoseconds` for the calling thread (`sched_setattr`,
/// SCHED_OTHER's runtime: Linux 6.12 and later use it as the thread's EEVDF slice; earlier
/// kernels ignore it). With `reset_on_fork`, threads and processes it creates from then on
/// start with the default slice instead of inheriting this one. 0 or an errno value.
int wb_set_thread_slice(uint64_t nanoseconds, int reset_on_fork);
/// The calling thread's slice as the scheduler reports it (its default when none was asked
/// for), in nanoseconds; 0 when it cannot be read.
uint64_t wb_thread_slice(void);

/// Where the Swift runtime keeps its hook for jobs on the global executor. NIO looks it up by
/// name in the dynamic symbol table, where a static stdlib does not put it; a reference the
/// linker resolves finds it in both forms.
void **wb_concurrency_enqueue_global_hook(void);

/// Dispatch's main queue, driven by a loop of the process's own instead of `dispatch_main`
/// (the interface Foundation's run loop uses on Linux). The eventfd Dispatch writes to when
/// the main queue has work; asking for it binds the main queue to the calling thread, which
/// must be the process's main thread. -1 when the kernel would report it as a regular file
/// (an event loop cannot poll such a descriptor): the main queue is then left as it was.
int wb_main_queue_eventfd(void);

/// Runs what the main queue holds, on the thread that asked for its eventfd.
void wb_main_queue_drain(void);

/// Whether the caller is the process's main thread.
int wb_is_main_thread(void);

/// Holds the calling thread, and the threads it starts from now on, on CPU `cpu`
/// (sched_setaffinity). 0 on success, -1 with errno. For the bench's pinned baselines.
int wb_hold_on_cpu(int cpu);

#endif
