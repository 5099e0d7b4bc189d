import CEpoll
import Foundation
import Glibc
import Synchronization

/// The broker's children's descriptors that it only reads (each worker's exit, as a pidfd, and
/// its stdout and stderr pipes), watched by one thread of its own with an epoll set.
///
/// These were libdispatch read sources: three made and torn down per worker, on two queues.
/// Under that churn libdispatch's epoll bookkeeping on Linux can free a descriptor's record
/// while the kernel still reports it (swift-corelibs-libdispatch issue 949, open). The broker
/// crashed once in `_dispatch_event_loop_drain`, at an address made of the bytes of an app's
/// id (a record freed and its memory reused), during a run of prewarmed opens and closes; it
/// did not happen again in 2,000 more, so that cause is likely, not proven. Here one thread
/// owns the set: it alone stops watching a descriptor and closes it, so no report can outlive
/// what it names.
final class DescriptorWatch: Sendable {
    /// What a handler says after reading: watch on, or done (the watch then closes the descriptor).
    enum Next: Sendable {
        case again
        case done
    }

    typealias Handler = @Sendable () -> Next

    static let shared = DescriptorWatch()

    private struct Watched {
        var fd: Int32
        var handler: Handler
    }

    private struct State {
        var watched: [UInt64: Watched] = [:]
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())
    /// Held while a handler runs, wherever it runs: handlers run one at a time (a descriptor
    /// watched by a thread of its own, below, included).
    private let running = Mutex(())
    /// -1 when the kernel gave no epoll set: each descriptor then gets a thread of its own.
    private let epoll: Int32

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return }
        Thread.detachNewThread { [self] in serve() }
    }

    /// Calls `handler` on the watch's thread whenever `fd` can be read (or has ended), until it
    /// returns `.done`; `fd` is then closed. The watch owns `fd` from now on. Handlers run one
    /// at a time.
    func watch(_ fd: Int32, _ handler: @escaping Handler) {
        guard epoll >= 0 else { return watchAlone(fd, handler) }
        // Known before the kernel can report it.
        let token = state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.watched[token] = Watched(fd: fd, handler: handler)
            return token
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = token
        if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 {
            state.withLock { _ = $0.watched.removeValue(forKey: token) }
            watchAlone(fd, handler)
        }
    }

    private func serve() {
        nameThisThread("wb-children")
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let ready = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), -1) }
            if ready < 0 {
                if errno == EINTR { continue }
                // Not expected (EBADF, EFAULT, EINVAL): nothing could be watched any more.
                fatalError("windowbroker: epoll_wait failed: \(String(cString: strerror(errno)))")
            }
            for event in events.prefix(Int(ready)) {
                let token = event.data.u64
                guard let watched = state.withLock({ $0.watched[token] }) else { continue }
                guard running.withLock({ _ in watched.handler() }) == .done else { continue }
                state.withLock { _ = $0.watched.removeValue(forKey: token) }
                _ = epoll_ctl(epoll, EPOLL_CTL_DEL, watched.fd, nil)
                close(watched.fd)
            }
        }
    }

    /// Without an epoll set: a thread that polls the one descriptor.
    private func watchAlone(_ fd: Int32, _ handler: @escaping Handler) {
        Thread.detachNewThread { [self] in
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while true {
                if poll(&waiting, 1, -1) < 0, errno == EINTR { continue }
                if running.withLock({ _ in handler() }) == .done { break }
            }
            close(fd)
        }
    }
}
