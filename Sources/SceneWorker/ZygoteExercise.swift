#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Glibc
import IPCWire
import NIOCore
import NIOPosix

/// What an app's zygote runs once before it forks its first scene: the SDK's share of an open
/// (`PrewarmExercise`), and the scene's own connection as `SceneRuntime.run` makes it: NIO's
/// event loop on this thread, a pipe channel like the one the main queue is drained through,
/// and the wire's pipeline on a socket, with two requests written in one flush, one answered,
/// and a command read and acknowledged over a socket pair whose other end this function
/// plays. Then the loop ends and every descriptor it made is closed.
///
/// Why: a forked scene inherits the runtime's caches as they were at the fork, so each type
/// built and each conformance found here is built and found once per app instead of once per
/// scene. In a `perf` profile of 20 forked scenes, half of a scene's time from its fork to its
/// answer went to building type metadata from mangled names and scanning conformance
/// records, most of it on NIO's and the wire's paths; with the wire's pipeline exercised on
/// an in-memory channel, NIO's event loop and its channels were still a fifth of it.
///
/// What may run here is narrow: at the fork the zygote must be one thread, with no Dispatch
/// thread ever started, no task pending and no descriptor of this exercise left open (the
/// zygote refuses to fork otherwise). So nothing here awaits. The loop is ended from a
/// short-lived thread of our own, joined before the fork, because NIO ends a loop only when
/// asked from off it; the completion it then hands to a Dispatch queue goes to a queue that
/// stays suspended, so Dispatch starts no thread for it.
@MainActor
enum ZygoteExercise {
    static func run() {
        PrewarmExercise.run()
        exerciseConnection()
    }

    private static func exerciseConnection() {
        var socket: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &socket) == 0 else { return }
        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else {
            close(socket[0])
            close(socket[1])
            return
        }
        // One thread, no exec in between: set after the fact, as pipe2 would have.
        for fd in pipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let (scene, peer, drained, signal) = (socket[0], socket[1], pipe[0], pipe[1])
        let ending = LoopEnding()
        MultiThreadedEventLoopGroup.withCurrentThreadAsEventLoop { loop in
            // Whatever happens below, the loop ends.
            loop.scheduleTask(in: .seconds(2)) { ending.end(loop) }
            NIOPipeBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(MainQueueDrain(exercising: true)) }
                }
                .takingOwnershipOfDescriptor(input: drained)
                .whenSuccess { _ in _ = write(signal, [UInt8](repeating: 1, count: 8), 8) }
            ClientBootstrap(group: loop).withConnectedSocket(scene)
                .flatMapThrowing { try WireChannel.wrapping($0) }
                .whenComplete { result in
                    guard case .success(let wire) = result else { return ending.end(loop) }
                    exchange(on: wire, peer: peer) { ending.end(loop) }
                }
        }
        ending.join()
        // The channels closed theirs with the loop; one never made is closed here.
        for fd in [scene, drained] where fcntl(fd, F_GETFD) != -1 { close(fd) }
        close(peer)
        close(signal)
    }

    /// A Hello answered by a Welcome and an update delivered and acknowledged, the peer's side
    /// written straight to its socket; `done` once the acknowledgement is on its way.
    nonisolated private static func exchange(on wire: WireChannel, peer: Int32, done: @escaping @Sendable () -> Void) {
        // Requests and replies go straight into the pipeline; the async writer is never used.
        let connection = WireConnection(wire, outbound: NIOAsyncChannelOutboundWriter<Envelope>.makeTestingWriter().0)
        connection.deliverOnLoop { envelope in
            connection.replyInBackground(to: envelope, with: .workerMessage(.with { $0.kind = .ack(.init()) }))
            done()
        }
        // Two frames in one flush, as a scene's report and its answer leave: NIO writes them with
        // one `writev`, whose buffer pool's type it builds at its first use (a tenth of what a
        // forked scene spent between reading its connect command and answering it). The second
        // request is never answered; its deadline goes with the loop.
        let hello = connection.issue(
            .hello(.current(.worker, clientName: "zygote", sessionID: "")), timeout: .seconds(2), what: "the exercise", flush: false)
        let ping = connection.issue(
            .controlRequest(.with { $0.ping = .with { $0.payload = Data("zygote".utf8) } }), timeout: .seconds(2), what: "the exercise",
            flush: false)
        connection.flush()
        for answer in [hello, ping] { answer.whenComplete { _ in } }
        var welcome = Envelope()
        welcome.replyTo = 1  // the connection's first request
        welcome.body = .welcome(.init())
        var update = Envelope()
        update.id = 1
        update.workerCommand = .with {
            $0.update = .with {
                $0.sequence = 1
                $0.event = .with {
                    $0.name = "zygote"
                    $0.payload = PlistValue.wire(dictionary: ["text": .string("zygote"), "n": .integer(1)])
                }
            }
        }
        for envelope in [welcome, update] {
            guard let bytes = try? envelope.serializedBytes() as [UInt8] else { return done() }
            let frame = withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { Array($0) } + bytes
            guard write(peer, frame, frame.count) == frame.count else { return done() }
        }
    }
}

/// Ends the zygote's exercise loop once, from a thread of its own (NIO ends a loop only when
/// asked from off it), and joins that thread.
private final class LoopEnding: @unchecked Sendable {
    // Touched on the loop's thread only, then by `join` after the loop has ended.
    private var thread: pthread_t?
    /// Where the loop's completion goes: a queue that is never resumed, so that Dispatch starts
    /// no thread for it (a zygote with a Dispatch thread could not fork).
    private let parked: DispatchQueue = {
        let queue = DispatchQueue(label: "windowbroker.zygote.parked")
        queue.suspend()
        return queue
    }()

    func end(_ loop: any EventLoop) {
        guard thread == nil else { return }
        let request = Unmanaged.passRetained(ShutdownRequest(loop: loop, queue: parked)).toOpaque()
        var created = pthread_t()
        guard pthread_create(&created, nil, { context in
            let request = Unmanaged<ShutdownRequest>.fromOpaque(context!).takeRetainedValue()
            request.loop.shutdownGracefully(queue: request.queue) { _ in }
            return nil
        }, request) == 0 else {
            Unmanaged<ShutdownRequest>.fromOpaque(request).release()
            return
        }
        thread = created
    }

    func join() {
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }
}

private final class ShutdownRequest {
    let loop: any EventLoop
    let queue: DispatchQueue
    init(loop: any EventLoop, queue: DispatchQueue) {
        self.loop = loop
        self.queue = queue
    }
}
