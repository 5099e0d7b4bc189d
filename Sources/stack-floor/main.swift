/// stack-floor: the benchmark's floor for our own software stack. `make bench` compares the
/// broker, wmctl and the scenes with C baselines; this program does the same exchanges with
/// the libraries they are built on (SwiftNIO, swift-protobuf, the static Swift runtime) and
/// nothing of ours but the generated schema: the same envelopes, framed the same way, each
/// side one NIO event loop and a plain handler. What the product costs above this floor is
/// ours; what this floor costs above C is the stack's.
///
///   stack-floor ping ROUNDS [--cpu]
///                                  ping a child over a socket pair; prints the p50 in µs
///   stack-floor fan RECEIVERS ROUNDS [--cpu]
///                                  one update to each child, then all their acks; p50 in µs
///   stack-floor relay ROUNDS [--cpu]
///                                  a prewarmed open's exchanges: an open request to a middle
///                                  child, which sends a connect command to a ready scene child
///                                  and answers the open with the scene's answer; p50 in µs
///   (--cpu: and the CPU time per delivery on each side; --pause MS: MS between rounds)
///   stack-floor serve              (a child, socket on fd 3) pong each ping, ack each update;
///                                  held on CPU N with STACK_FLOOR_SERVE_CPU=N (the bench holds
///                                  the two sides of a ping on two CPUs, the parent by taskset)
///   stack-floor hello              (spawned with fd 3) start a loop, write one Hello, exit
///   stack-floor middle             (a child, the client on fd 3, the scene on fd 4) relays each
///                                  open to the scene and its answer back, as the broker's
///                                  open does for a prewarmed process, and no more
///   stack-floor listen PATH        the child's side on a Unix socket at PATH, for the C control
///                                  client (bench/control_ping.c): a Hello is welcomed, then
///                                  each ping ponged, as the broker's fast path does
///   STACK_FLOOR_EXE=PATH           the program the children run (default: this one); lets
///                                  `valgrind` count the parent's instructions alone
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CLinuxShim
import IPCWire
import NIOCore
import NIOPosix
import SwiftProtobuf

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

typealias Envelope = Windowbroker_V1_Envelope

/// The wire's framing: a 4-byte big-endian length, then one envelope.
struct LengthPrefixedFrames: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self),
              buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: Int(length))!))
        return .continue
    }
}

func framed(_ envelope: Envelope, _ allocator: ByteBufferAllocator) -> ByteBuffer {
    let bytes: [UInt8] = try! envelope.serializedBytes()
    var buffer = allocator.buffer(capacity: 4 + bytes.count)
    buffer.writeInteger(UInt32(bytes.count))
    buffer.writeBytes(bytes)
    return buffer
}

func decoded(_ frame: ByteBuffer) -> Envelope {
    try! Envelope(serializedBytes: Array(frame.readableBytesView))
}

func median(_ samples: [Double]) -> Double {
    let sorted = samples.sorted()
    return sorted[sorted.count / 2]
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) * 1e6 + Double(time.tv_nsec) / 1e3
}

/// The child's side: what a broker does with a Hello and a ping and a scene with an update,
/// and no more.
final class Answerer: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Whether the process ends with its connection (a child on a socket pair does; a server
    /// on a path waits for the next client).
    private let endsWithConnection: Bool

    init(endsWithConnection: Bool = true) {
        self.endsWithConnection = endsWithConnection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request = decoded(unwrapInboundIn(data))
        var reply = Envelope()
        reply.replyTo = request.id
        switch request.body {
        case .hello:
            reply.welcome = .init()
        case .controlRequest(let control):
            guard case .ping(let ping) = control.kind else { return }
            reply.controlReply = .with { $0.ping = .with { $0.payload = ping.payload } }
        case .workerCommand(let command):
            switch command.kind {
            case .update(let update):
                guard case .event(let event) = update.kind, event.name == "tick" else { return }
                reply.workerMessage = .with { $0.ack = .init() }
            case .connect(let connect):
                // A scene's answer once its callbacks ran: the configuration it connected with.
                reply.workerMessage = .with { $0.connected = .with { $0.configuration = connect.session.configuration } }
            default:
                return
            }
        default:
            return
        }
        context.writeAndFlush(wrapOutboundOut(framed(reply, context.channel.allocator)), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if endsWithConnection { exit(0) }
    }
}

/// The parent's side: sends a round, counts the answers, starts the next round from the
/// last answer (no thread hop), and fulfils `done` with the samples.
final class Rounds: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let total: Int
    private let send: (Int) -> Void
    private let expected: Int
    private let done: EventLoopPromise<[Double]>
    private var samples: [Double] = []
    private var answered = 0
    private var started = 0.0

    /// Between a round's last answer and the next round (nil: none, back to back).
    private let pause: TimeAmount?

    init(rounds: Int, answersPerRound: Int, pause: TimeAmount? = nil, done: EventLoopPromise<[Double]>, send: @escaping (Int) -> Void) {
        self.total = rounds
        self.expected = answersPerRound
        self.pause = pause
        self.done = done
        self.send = send
        samples.reserveCapacity(rounds)
    }

    func start() {
        started = now()
        send(0)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let answer = decoded(unwrapInboundIn(data))
        // Every answer must be to this round's request: a floor that counted anything would lie.
        guard answer.replyTo == UInt64(samples.count + 1) else { fatalError("answer to \(answer.replyTo) in round \(samples.count + 1)") }
        answered += 1
        guard answered == expected else { return }
        samples.append(now() - started)
        answered = 0
        guard samples.count < total else {
            done.succeed(samples)
            return
        }
        let round = samples.count
        let next = { [self] in
            started = now()
            send(round)
        }
        if let pause { context.eventLoop.assumeIsolated().scheduleTask(in: pause, next) } else { next() }
    }
}

/// The middle of a relayed open, the broker's part with nothing of ours: an open read from
/// the client becomes a connect command to the scene, and the scene's answer becomes the
/// open's reply. Both channels are on one loop, so each side writes to the other directly.
final class Relay: @unchecked Sendable {
    var client: Channel?
    var scene: Channel?

    /// One of the middle's two channels; the client's end also ends the process.
    final class Side: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let relay: Relay
        let isClient: Bool
        init(_ relay: Relay, isClient: Bool) { (self.relay, self.isClient) = (relay, isClient) }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = decoded(unwrapInboundIn(data))
            if isClient { relay.opened(envelope) } else { relay.answered(envelope) }
        }

        func channelInactive(context: ChannelHandlerContext) { if isClient { exit(0) } }
    }

    /// The connect command carries the open's own id, so the scene's answer names the open it
    /// answers: one connection each way, one request at a time, nothing to map.
    func opened(_ request: Envelope) {
        guard case .controlRequest(let control) = request.body, case .open(let open) = control.kind, let scene else { return }
        var command = Envelope()
        command.id = request.id
        command.workerCommand = .with {
            $0.connect = .with {
                $0.session = .with {
                    $0.id = "floor-session-\(request.id)"
                    $0.appID = open.appID
                    $0.configuration = "Default"
                    $0.role = "windowApplication"
                    $0.title = open.activity.title
                    $0.state = .foregroundActive
                    $0.createdAt = now() / 1e6
                    $0.launchCount = 1
                }
                $0.newSession = true
                $0.userActivities = [open.activity]
                $0.availableConfigurations = ["Default"]
                $0.then = [.with { $0.transition = .willEnterForeground }, .with { $0.transition = .didBecomeActive }]
            }
        }
        scene.writeAndFlush(framed(command, scene.allocator), promise: nil)
    }

    func answered(_ answer: Envelope) {
        guard case .workerMessage(let message) = answer.body, case .connected = message.kind, let client else { return }
        var reply = Envelope()
        reply.replyTo = answer.replyTo
        reply.controlReply = .with { $0.session = .with { $0.id = "relayed"; $0.state = .foregroundActive } }
        client.writeAndFlush(framed(reply, client.allocator), promise: nil)
    }
}

/// Starts this program with `arguments` and `descriptors` as its fd 3, 4, ...
func spawnChild(_ arguments: [String], descriptors: [CInt]) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    for (index, fd) in descriptors.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, CInt(3 + index)) }
    var pid: pid_t = 0
    // This very program, however it was started (a bare name found on PATH included), or the
    // one STACK_FLOOR_EXE names: under valgrind, /proc/self/exe is valgrind's own tool.
    let path = getenv("STACK_FLOOR_EXE").map { String(cString: $0) } ?? "/proc/self/exe"
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup(CommandLine.arguments[0])] + arguments.map { strdup($0) } + [nil]
    guard posix_spawn(&pid, path, &actions, nil, argv, environ) == 0 else { fatalError("posix_spawn \(path)") }
    posix_spawn_file_actions_destroy(&actions)
    return pid
}

/// A fresh socket pair.
func socketPair() -> (CInt, CInt) {
    var pair: [CInt] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { fatalError("socketpair") }
    return (pair[0], pair[1])
}

/// The processes an exchange talks to: the sockets it writes each round to (one answer
/// expected on each) and every child it started.
struct Peers {
    var sockets: [CInt] = []
    var children: [pid_t] = []
}

/// `count` children running `stack-floor serve`, each with one end of a fresh socket pair as
/// its fd 3.
func spawnServers(_ count: Int) -> Peers {
    var peers = Peers()
    for _ in 0..<count {
        let (ours, theirs) = socketPair()
        peers.children.append(spawnChild(["serve"], descriptors: [theirs]))
        close(theirs)
        peers.sockets.append(ours)
    }
    return peers
}

/// A ready scene (`serve`) and the middle between it and this process, which talks to the
/// middle alone.
func spawnRelay() -> Peers {
    let (middleToScene, sceneSide) = socketPair()
    let scene = spawnChild(["serve"], descriptors: [sceneSide])
    close(sceneSide)
    let (ours, middleSide) = socketPair()
    let middle = spawnChild(["middle"], descriptors: [middleSide, middleToScene])
    close(middleSide)
    close(middleToScene)
    return Peers(sockets: [ours], children: [middle, scene])
}

func channel(on socket: CInt, _ loop: EventLoop, _ handler: any ChannelHandler & Sendable) -> Channel {
    try! ClientBootstrap(group: loop)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LengthPrefixedFrames()))
                try channel.pipeline.syncOperations.addHandler(handler)
            }
        }
        .withConnectedSocket(socket).wait()
}

/// `rounds` rounds of one request (`request(round)`, given its id here), encoded once and written
/// to each of the peers' sockets before any answer is read; a round ends with its last answer.
/// Returns the p50 of the rounds in µs. With `--cpu`, also prints the CPU time per delivery of
/// the children and of this process, counted from the second round.
func exchange(_ rounds: Int, with peers: Peers, on loop: EventLoop, request: @escaping (Int) -> Envelope) -> Double {
    let done = loop.makePromise(of: [Double].self)
    var outbound: [Channel] = []
    var cpuAfterFirstRound = (receivers: 0, sender: 0)
    let childrenCPU = { peers.children.reduce(0) { $0 + cpuNanoseconds(of: $1) } }
    let handler = Rounds(rounds: rounds, answersPerRound: peers.sockets.count, pause: pauseBetweenRounds(), done: done) { round in
        // The CPU counted from here on: the start of the processes and loops is left out.
        if round == 1 { cpuAfterFirstRound = (childrenCPU(), cpuNanoseconds(of: getpid())) }
        var envelope = request(round)
        envelope.id = UInt64(round + 1)
        let frame = framed(envelope, outbound[0].allocator)
        for receiver in outbound { receiver.writeAndFlush(frame, promise: nil) }
    }
    outbound = peers.sockets.map { channel(on: $0, loop, handler) }
    try! loop.submit { handler.start() }.wait()
    let result = median(try! done.futureResult.wait())
    if CommandLine.arguments.contains("--cpu") {
        // CPU time per delivery, the receivers' and this process's, as the bench reads a scene's.
        let children = childrenCPU() - cpuAfterFirstRound.receivers
        let own = cpuNanoseconds(of: getpid()) - cpuAfterFirstRound.sender
        let deliveries = Double((rounds - 1) * peers.sockets.count)
        print("receiver CPU per delivery \(microseconds(Double(children) / 1e3 / deliveries)) µs, sender CPU per delivery \(microseconds(Double(own) / 1e3 / deliveries)) µs")
    }
    for receiver in outbound { try! receiver.close().wait() }
    for child in peers.children { waitpid(child, nil, 0) }
    return result
}

/// `--pause MS`: each round starts that long after the last one ended, as the bench's opens
/// and `wmctl` posts come to a broker that has gone idle in between (its threads asleep, its
/// CPU perhaps halted), instead of back to back. MS may have decimals: the bench pauses the
/// fan-out as long as its `wmctl` loop left between two posts, measured to the microsecond.
func pauseBetweenRounds() -> TimeAmount? {
    guard let flag = CommandLine.arguments.firstIndex(of: "--pause"), flag + 1 < CommandLine.arguments.count,
          let milliseconds = Double(CommandLine.arguments[flag + 1]), milliseconds >= 0 else { return nil }
    return .nanoseconds(Int64(milliseconds * 1_000_000))
}

/// A control client's ping, as `wmctl ping` sends it.
func ping(_ round: Int) -> Envelope {
    .with { $0.controlRequest = .with { $0.ping = .with { $0.payload = Data("ping \(round)".utf8) } } }
}

/// An update as the broker delivers a post of the bench's `tick` to a scene.
func update(_ round: Int) -> Envelope {
    .with {
        $0.workerCommand = .with {
            $0.update = .with {
                $0.sequence = UInt64(round + 1)
                $0.event = .with {
                    $0.name = "tick"
                    $0.postedAt = now() / 1e6
                    $0.payload = .with {
                        $0.entries = [
                            .with { $0.key = "noteID"; $0.value = .with { $0.stringValue = "bench" } },
                            .with { $0.key = "n"; $0.value = .with { $0.integerValue = 1 } },
                        ]
                    }
                }
            }
        }
    }
}

/// An open of a new session with an activity, as the bench's prewarmed opens ask for one.
func openRequest(_ round: Int) -> Envelope {
    .with {
        $0.controlRequest = .with {
            $0.open = .with {
                $0.appID = "warm"
                $0.activity = .with {
                    $0.activityType = "notes.edit"
                    $0.userInfo = .with {
                        $0.entries = [.with { $0.key = "noteID"; $0.value = .with { $0.stringValue = "floor\(round)" } }]
                    }
                }
            }
        }
    }
}

/// A process's CPU time so far, all its threads (`/proc/PID/task/*/schedstat`, the first field
/// in nanoseconds), as the bench reads a scene's.
func cpuNanoseconds(of pid: pid_t) -> Int {
    guard let tasks = opendir("/proc/\(pid)/task") else { return 0 }
    defer { closedir(tasks) }
    var total = 0
    while let entry = readdir(tasks) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard name.first != ".", let field = firstField(of: "/proc/\(pid)/task/\(name)/schedstat") else { continue }
        total += Int(field) ?? 0
    }
    return total
}

/// The first space-separated field of a small file, or nil when it cannot be read.
func firstField(of path: String) -> String? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 128)
    let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    return String(decoding: bytes[..<count].prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
}

/// Whole microseconds and one decimal, without Foundation's formatting.
func microseconds(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

let arguments = Array(CommandLine.arguments.dropFirst())
// Held before the event loop's thread exists: a thread started later inherits the mask.
if arguments.first == "serve", let cpu = getenv("STACK_FLOOR_SERVE_CPU").flatMap({ Int32(String(cString: $0)) }),
   wb_hold_on_cpu(cpu) != 0 {
    fatalError("cannot hold the server on CPU \(cpu)")
}
let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()
switch arguments.first {
case "serve":
    try! channel(on: 3, loop, Answerer()).closeFuture.wait()
case "hello":
    // A scene's first frame: its Hello, once a loop runs and the socket is a channel.
    let parent = channel(on: 3, loop, Answerer())
    var hello = Envelope()
    hello.id = 1
    hello.hello = .with { $0.protocolVersion = WireProtocol.version; $0.peerKind = .worker; $0.clientName = "stack-floor" }
    try! parent.writeAndFlush(framed(hello, parent.allocator)).wait()
    exit(0)
case "middle":
    let relay = Relay()
    relay.scene = channel(on: 4, loop, Relay.Side(relay, isClient: false))
    relay.client = channel(on: 3, loop, Relay.Side(relay, isClient: true))
    try! relay.client!.closeFuture.wait()
case "relay":
    print(microseconds(exchange(arguments.count > 1 ? Int(arguments[1]) ?? 2000 : 2000, with: spawnRelay(), on: loop, request: openRequest)))
case "listen" where arguments.count > 1:
    unlink(arguments[1])
    let server = try! ServerBootstrap(group: loop)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LengthPrefixedFrames()))
                try channel.pipeline.syncOperations.addHandler(Answerer(endsWithConnection: false))
            }
        }
        .bind(unixDomainSocketPath: arguments[1]).wait()
    try! server.closeFuture.wait()
case "ping":
    print(microseconds(exchange(arguments.count > 1 ? Int(arguments[1]) ?? 5000 : 5000, with: spawnServers(1), on: loop, request: ping)))
case "fan":
    let receivers = arguments.count > 1 ? Int(arguments[1]) ?? 10 : 10
    print(microseconds(exchange(arguments.count > 2 ? Int(arguments[2]) ?? 200 : 200, with: spawnServers(receivers), on: loop, request: update)))
default:
    print("usage: stack-floor ping ROUNDS [--cpu] [--pause MS] | fan RECEIVERS ROUNDS [--cpu] [--pause MS] | relay ROUNDS [--cpu] [--pause MS] | serve | middle | hello | listen PATH")
    exit(2)
}
