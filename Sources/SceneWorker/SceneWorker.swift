/// SceneWorker: the SDK an app links to run as a windowbroker scene.
///
/// An app implements `AppDelegate` and `SceneDelegate` (modelled on UIKit's) and calls
/// `SceneWorker.run(_:)`. The runtime adopts the socket the broker handed it as fd 3, says
/// Hello, and turns broker commands into delegate calls in the contract's order, answering
/// each. The process dies with the broker (PR_SET_PDEATHSIG) and exits after didDisconnect.
import CLinuxShim
import CSceneZygote
import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
// Apps get the value types they need (UserActivity, PlistValue, BrokerError, ...) with the SDK,
// and GTK 4's C API, which their windows are made of.
@_exported import CGtk
@_exported import IPCWire
import NIOCore
import NIOPosix

/// The runtime: ``run(_:)`` turns this process into a scene the broker drives.
public enum SceneWorker {
    /// What the runtime could not do; printed to stderr before the process exits.
    public enum StartError: Error, CustomStringConvertible {
        /// There is no broker connection on fd 3: the program was started by hand.
        case notStartedByBroker
        /// The broker closed the connection before the scene connected.
        case brokerGone
        /// The broker refused the Hello (a session this process was not started for, a protocol version it does not speak).
        case handshakeFailed(String)

        public var description: String {
            switch self {
            case .notStartedByBroker:
                "this program is a windowbroker scene worker; start it through the broker (wmctl open APP)"
            case .brokerGone: "the broker that started this worker is gone"
            case .handshakeFailed(let message): "the broker refused this worker: \(message)"
            }
        }
    }

    /// Runs the scene until the broker disconnects it, then exits the process. Call it first
    /// thing in the program's top-level code (`await SceneWorker.run(MyApp())`), so that it
    /// starts on the process's main thread.
    @MainActor
    public static func run(_ app: some AppDelegate) async -> Never {
        // stdout is a pipe to the broker: line-buffered, a print() reaches `wmctl logs` and
        // the journal as it happens, not when a 4 KiB buffer fills or the process ends.
        wb_line_buffer_stdout()
        let runtime = SceneRuntime(app: app)
        if wb_zygote_pending() != 0 {
            // The app's zygote: the runtime's first use of what every open runs happens here,
            // once per app, and each scene forked below inherits it (metadata, conformances).
            ZygoteExercise.run()
            _ = wb_zygote_serve()
        }
        // With a display the main thread is GTK's (its loop drains the main actor's jobs).
        GtkMainLoop.runIfDisplayed {
            await finish(runtime, on: nil)
        }
        MainThreadLoop.run { loop in
            await finish(runtime, on: loop)
        }
        // Not on the main thread (or its loop cannot be built here): the socket gets an event
        // loop thread of its own, which also runs the runtime's tasks; a command read there
        // goes to the main actor from the thread that read it, with no pool thread between.
        WireRuntime.runTasksOnEventLoops(loops: 1)
        await finish(runtime, on: nil)
    }

    @MainActor
    private static func finish(_ runtime: SceneRuntime, on mainThreadLoop: (any EventLoop)?) async -> Never {
        do {
            try await runtime.run(mainThreadLoop: mainThreadLoop)
            exit(0)
        } catch {
            var standardError = StandardError()
            print("scene worker: \(error)", to: &standardError)
            exit(error is StartError ? 2 : 1)
        }
    }
}

/// Standard error as a text stream: `print("…", to: &standardError)` reaches `wmctl logs` and
/// the journal as a warning (stdout is information). Needs no Foundation.
public struct StandardError: TextOutputStream {
    /// The process's standard error.
    public init() {}

    /// Writes `string` as it is, unbuffered.
    public mutating func write(_ string: String) {
        PlainOutput.write(string, to: STDERR_FILENO)
    }
}

@MainActor
package final class SceneRuntime {
    private let app: any AppDelegate
    private var scene: Scene?
    private var delegate: (any SceneDelegate)?
    private var launched = false
    /// What the scene sends on its own (scene updates, storage, posts, defaults writes,
    /// restoration extensions), in the order it happened, each answered before the next.
    private var outgoing = CircularBuffer<Outgoing>()
    /// The item written and waiting for its answer; the next waits behind it.
    private var outgoingInFlight = false
    /// Set once connected: where outgoing items go. Until then they wait.
    private var outgoingConnection: WireConnection?
    /// The main thread's event loop when it is the connection's: answers arrive on the main
    /// thread itself.
    private var mainThreadLoop: (any EventLoop)?
    /// `sendNextOutgoing` is looping: a nested call leaves the next item to it.
    private var outgoingSending = false
    /// A send is due after the current main-actor job.
    private var outgoingScheduled = false
    /// Items yielded to `outgoing`, and how many of them are written (or needed no frame): an
    /// answer to a command is written after everything queued before it (`flushOutgoing`).
    private var outgoingQueued: UInt64 = 0
    private var outgoingWritten = GrowingCount()
    /// Set once didDisconnect has been acknowledged: the process ends.
    private var finished = false
    /// Resumed when the connection ends: didDisconnect was answered, or the broker closed it.
    private var ended = false
    /// Why the broker did not take the Hello.
    private var handshakeError: (any Error)?
    private var endWaiter: CheckedContinuation<Void, Never>?
    /// Set once connected: what the scene's requests to the broker go through.
    private var connection: WireConnection?
    /// Scene changes not sent yet, merged field by field: a scene that changes its title a
    /// thousand times while one update is on its way sends the latest, not a thousand.
    private var pendingSceneUpdate: Windowbroker_V1_SceneUpdate?
    /// Storage writes not sent yet, merged the same way.
    private var pendingStorage: PendingStorage?
    /// The scene's GTK window and everything about it (with a display).
    private lazy var windows = SceneWindowHost(outlet: .init(
        send: { [weak self] message in self?.enqueue(.message(message)) },
        request: { [weak self] request in
            try await Self.controlRequest(request, over: self?.connection, timeout: .seconds(15))
        },
        performShortcut: { [weak self] shortcut in await self?.performShortcut(shortcut) }))

    enum Outgoing: Sendable {
        /// The merged scene update or storage change, taken when its turn comes.
        case sceneUpdate
        case storage
        case message(Windowbroker_V1_WorkerMessage.OneOf_Kind)
        case request(ControlRequest, CheckedContinuation<ControlReply, any Error>)
        /// The app's menu additions, sent once at launch; a refusal is printed, not thrown.
        case appMenu(Windowbroker_V1_MenuChangeRequest)

        /// Whether the next item waits for this one's answer: all but the app's menu, whose
        /// answer nothing waits for (`sendNextOutgoing`).
        var holdsTheLine: Bool {
            if case .appMenu = self { false } else { true }
        }
    }

    package init(app: any AppDelegate) {
        self.app = app
    }

    /// `mainThreadLoop`: the event loop that is the process's main thread, where the main actor
    /// runs too (`MainThreadLoop`); nil: NIO's own loop thread.
    func run(mainThreadLoop: (any EventLoop)?) async throws {
        guard let fdText = ProcessFacts.environment("WINDOWBROKER_FD"), let fd = Int32(fdText) else {
            throw SceneWorker.StartError.notStartedByBroker
        }
        // A prewarmed worker starts without a session; it learns it in willConnect.
        let sessionID = ProcessFacts.environment("WINDOWBROKER_SESSION") ?? ""
        // Die with the broker; if it is already gone (we were reparented), stop now.
        _ = wb_set_parent_death_signal(SIGKILL)
        if let brokerPID = ProcessFacts.environment("WINDOWBROKER_PID").flatMap(Int32.init), getppid() != brokerPID {
            throw SceneWorker.StartError.brokerGone
        }
        try await run(socket: fd, sessionID: sessionID, mainThreadLoop: mainThreadLoop)
    }

    /// Runs the scene on a connected socket until didDisconnect (or the peer's close): what
    /// `run()` does once it found the broker's socket, and what `SceneTestHost` drives.
    package func run(socket fd: Int32, sessionID: String, mainThreadLoop: (any EventLoop)? = nil) async throws {
        let channel: WireChannel
        if let loop = mainThreadLoop {
            // Connected and wrapped on the loop's thread: NIO's async connect is a nonisolated
            // function, which would move to the global executor and back.
            channel = try await ClientBootstrap(group: loop).withConnectedSocket(fd)
                .flatMapThrowing { try WireChannel.wrapping($0) }
                .value()
        } else {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .withConnectedSocket(fd) { channel in
                    channel.eventLoop.makeCompletedFuture { try WireChannel.wrapping(channel) }
                }
        }
        try await channel.executeThenClose { _, outbound in
            let connection = WireConnection(channel, outbound: outbound)
            self.connection = connection
            // Frames are handed over on the loop, in both arrangements, and the channel's close
            // ends the connection (the router closes it when a frame does not decode).
            let loopIsMainThread = mainThreadLoop != nil
            // Each command in a main-actor task of its own, started in arrival order: a
            // delegate that awaits a request of its own (an action opening a window) never
            // keeps the next frame from being read (the answer it waits for), nor the broker's
            // next lifecycle command from running.
            connection.deliverOnLoop { envelope in
                // Read on the main thread: the command starts where it was read and runs until
                // it first waits; its answer is written from there too. One thread, no hop.
                // (What it awaits still comes back through the global executor first: Swift's
                // runtime resumes a continuation there; see MainActorQueue.)
                Self.onMainActor(from: loopIsMainThread) {
                    if self.answerUpdateInPlace(envelope, connection: connection) { return }
                    _ = Task.immediate { await self.handle(envelope, connection: connection) }
                }
            }
            channel.channel.closeFuture.whenComplete { _ in
                Self.onMainActor(from: loopIsMainThread) { self.connectionEnded() }
            }
            self.mainThreadLoop = mainThreadLoop
            // A prewarmed process joins its pool ready: GTK initialised with its display (at
            // start) and a window like a scene's laid out once (`GtkWarmUp`), and the runtime's
            // first use of what every open runs (`PrewarmExercise`).
            if sessionID.isEmpty {
                GtkWarmUp.run()
                PrewarmExercise.run()
            }
            // The Welcome is taken in the answer's callback: a task waiting for it would be
            // resumed through the global executor, starting Dispatch's pool for that alone.
            let hello = connection.issue(
                .hello(.current(.worker, clientName: ProcessFacts.name, sessionID: sessionID)),
                timeout: .seconds(30), what: "the broker")
            // What the scene says on its own goes out from now on, behind the Hello.
            self.outgoingConnection = connection
            self.sendNextOutgoing()
            self.whenAnswered(hello) { reply in
                do {
                    // A refusal is thrown with the broker's reason.
                    guard case .welcome = try reply.get().body else {
                        throw SceneWorker.StartError.handshakeFailed("unexpected answer to Hello")
                    }
                    self.welcomed()
                } catch {
                    self.handshakeError = error
                    self.connectionEnded()
                }
            }
            // The connection ends when the broker closes it or after didDisconnect; leaving
            // executeThenClose closes the channel after the last reply has been written.
            await self.waitForEnd()
            self.windows.finish()
            if let error = self.handshakeError { throw error }
        }
    }

    /// The broker took the Hello: the app launches (a prewarmed process does it before any
    /// session is known, so that binding it to one is a single command).
    private func welcomed() {
        finishLaunchingIfNeeded()
        Task { await self.windows.performShortcuts() }
    }

    /// The connection is over: didDisconnect was answered, or the broker closed it.
    private func connectionEnded() {
        ended = true
        endWaiter?.resume()
        endWaiter = nil
    }

    /// Returns once the connection is over.
    private func waitForEnd() async {
        guard !ended else { return }
        await withCheckedContinuation { endWaiter = $0 }
    }

    /// Sends what the scene says on its own, in order, one item at a time, each written once
    /// the one before it was answered (the app's menu, sent once per process, excepted:
    /// nothing waits for its answer, and in a cold start the first scene's report and answer
    /// would otherwise wait a round trip behind it). Driven by the answers' callbacks, not by a
    /// task waiting for them: Swift's runtime resumes a waiting task through the global
    /// executor (a pool thread woken, then the main queue's), where a callback on the main
    /// thread's loop runs where the answer was read.
    private func sendNextOutgoing() {
        guard !outgoingSending else { return }
        outgoingSending = true
        defer { outgoingSending = false }
        // An answer that is there at once (the connection is closed) comes back into this
        // loop instead of nesting a call per item.
        var sent: WireConnection?
        while !outgoingInFlight, let connection = outgoingConnection, let item = outgoing.popFirst() {
            send(item, on: connection)
            sent = connection
        }
        // What was written, and the answers it let out behind it, leave in one system call:
        // the broker reads a scene's report and the answer it leads to together. Flushed one
        // by one, the report's write woke the broker, which on a busy machine took the scene's
        // CPU before the answer was written (0.05-0.8 ms between the two in a prewarmed open).
        sent?.flush()
    }

    /// Writes one outgoing item, unless it has nothing left to say (its changes went out with
    /// an earlier one). Each is a request: a refused scene update or storage change (an
    /// undeclared activity type, an oversized value) reaches the scene's delegate.
    private func send(_ item: Outgoing, on connection: WireConnection) {
        let body: Envelope.OneOf_Body
        let timeout: Duration
        switch item {
        case .appMenu(let change):
            (body, timeout) = (.controlRequest(.with { $0.kind = .menuChange(change) }), .seconds(60))
        case .request(let request, _):
            (body, timeout) = (.controlRequest(.with { $0.kind = request }), .seconds(60))
        case .sceneUpdate:
            guard let merged = takeSceneUpdate() else { return outgoingWritten.advance() }
            (body, timeout) = (.workerMessage(.with { $0.kind = .sceneUpdate(merged) }), .seconds(30))
        case .storage:
            guard let merged = takeStorage() else { return outgoingWritten.advance() }
            (body, timeout) = (.workerMessage(.with { $0.kind = .storage(merged.wire) }), .seconds(30))
        case .message(let kind):
            (body, timeout) = (.workerMessage(.with { $0.kind = kind }), .seconds(30))
        }
        if item.holdsTheLine { outgoingInFlight = true }
        let answer = connection.issue(body, timeout: timeout, what: "the broker", flush: false)
        // Written: a command's answer may follow it now (the broker takes in what came before
        // an answer before it acts on the answer).
        outgoingWritten.advance()
        whenAnswered(answer) { outcome in self.answered(item, outcome) }
    }

    /// Runs `body` with the broker's reply (its refusal as the failure), where the reply was
    /// read when that is the main thread.
    private func whenAnswered(_ answer: EventLoopFuture<WireAnswer>, _ body: @escaping @MainActor (Result<Envelope, any Error>) -> Void) {
        let loopIsMainThread = mainThreadLoop != nil
        answer.whenComplete { result in
            let reply = result.flatMap { answer in Result<Envelope, any Error> { try answer.accepted() } }
            Self.onMainActor(from: loopIsMainThread) { body(reply) }
        }
    }

    /// Runs `body` on the main actor from a callback on the connection's event loop: in place
    /// when that loop is the main thread, else in a main-actor task.
    nonisolated private static func onMainActor(from loopIsMainThread: Bool, _ body: @escaping @MainActor () -> Void) {
        if loopIsMainThread {
            MainActor.assumeIsolated(body)
        } else {
            Task { @MainActor in body() }
        }
    }

    /// The broker's answer to the item in flight; the next item goes out.
    private func answered(_ item: Outgoing, _ outcome: Result<Envelope, any Error>) {
        let controlReply = { outcome.flatMap { reply in Result { try Self.controlReply(to: reply) } } }
        switch (item, outcome) {
        case (.request(_, let waiter), _):
            waiter.resume(with: controlReply())
        case (.appMenu, _):
            if case .failure(let error) = controlReply() {
                var standardError = StandardError()
                print("scene worker: the app's menu was refused: \(error)", to: &standardError)
            }
        case (_, .failure(let error as BrokerError)) where error.code != .connectionClosed:
            updateRefused(error)
        default:
            break
        }
        guard item.holdsTheLine else { return }
        outgoingInFlight = false
        sendNextOutgoing()
    }

    private func enqueue(_ item: Outgoing) {
        outgoingQueued += 1
        outgoing.append(item)
        guard !outgoingScheduled, !outgoingInFlight, outgoingConnection != nil else { return }
        // After the job that queued it: what the app changes in one callback goes out merged,
        // in one frame, with the callback's answer right behind it.
        outgoingScheduled = true
        let send = { @MainActor in
            self.outgoingScheduled = false
            self.sendNextOutgoing()
        }
        if let loop = mainThreadLoop {
            loop.execute { Self.onMainActor(from: true, send) }
        } else {
            Task { @MainActor in send() }
        }
    }

    /// Sends a control request as this scene (nil `connection`: not connected) and returns the
    /// broker's answer.
    nonisolated(nonsending) private static func controlRequest(_ request: ControlRequest, over connection: WireConnection?, timeout: Duration) async throws -> ControlReply {
        guard let connection else { throw BrokerError(.connectionClosed, "the scene is not connected to the broker") }
        return try controlReply(to: await connection.request(.controlRequest(.with { $0.kind = request }), timeout: timeout, what: "the broker"))
    }

    nonisolated private static func controlReply(to reply: Envelope) throws -> ControlReply {
        guard case .controlReply(let control) = reply.body, let kind = control.kind else {
            throw BrokerError(.malformedFrame, "the broker sent an unexpected reply")
        }
        return kind
    }

    /// A control request in this scene's order (after the updates and storage it wrote before).
    private func orderedRequest(_ request: ControlRequest) async throws -> ControlReply {
        try await withCheckedThrowingContinuation { enqueue(.request(request, $0)) }
    }

    /// Returns once everything the scene queued so far is written: an answer to the broker
    /// must not overtake the storage and updates that led to it. The broker takes in what a
    /// scene wrote before an answer before it acts on the answer, so their acknowledgements
    /// need not be waited for (one round trip less per command that reports something).
    private func flushOutgoing() async {
        let upTo = outgoingQueued
        guard outgoingWritten.value < upTo else { return }
        await withCheckedContinuation { outgoingWritten.wait(for: upTo, $0) }
    }

    private func handle(_ envelope: Envelope, connection: WireConnection) async {
        guard case .workerCommand(let command) = envelope.body else { return }
        guard let kind = command.kind else {
            // A command this SDK does not know (a newer broker): answered, so the broker does
            // not wait for it until its deadline and stop the scene.
            await connection.reply(to: envelope, error: BrokerError(.invalidRequest, "this scene's SDK does not know that command; it is older than the broker"))
            return
        }
        do {
            let performed = try await perform(kind)
            let reply: Envelope.OneOf_Body = .workerMessage(.with { $0.kind = performed })
            if finished {
                // The last answer (didDisconnect's) is written before the process goes.
                await flushOutgoing()
                await connection.reply(to: envelope, with: reply)
            } else {
                answerBehindQueued(envelope, with: reply, on: connection)
            }
        } catch {
            await connection.reply(to: envelope, error: Self.refusal(error))
        }
        if finished {
            // didDisconnect was acknowledged: the system is taking this process away.
            connectionEnded()
        }
    }

    /// An update delivery runs app code that cannot wait (`didReceive`, `updatesDropped`):
    /// handled and answered where it was read, in the order `handle` would, without a task of
    /// its own (a task per delivery was 5% of a scene's instructions for each update).
    private func answerUpdateInPlace(_ envelope: Envelope, connection: WireConnection) -> Bool {
        guard !finished, case .workerCommand(let command) = envelope.body, case .update(let delivery) = command.kind else { return false }
        do {
            try deliver(delivery)
            acknowledgeBehindQueued(envelope, on: connection)
        } catch {
            answerBehindQueued(envelope, with: .error(Self.refusal(error).wire), on: connection)
        }
        return true
    }

    /// An update's acknowledgement, encoded once: each one is then its `reply_to` and these
    /// bytes (building and encoding it per delivery was 5,700 of a scene's 71,300 instructions).
    /// A fixed proto3 message without extensions or `Any`: encoding it cannot fail.
    private static let acknowledgement = try! PreparedBody(.workerMessage(.with { $0.kind = .ack(.init()) }))

    private func acknowledgeBehindQueued(_ command: Envelope, on connection: WireConnection) {
        outgoingWritten.when(reaching: outgoingQueued) {
            connection.replyInBackground(to: command, with: Self.acknowledgement)
        }
    }

    /// Writes a command's answer right behind what the scene queued before it, by whoever
    /// writes the last of that (no task is woken only to write it).
    private func answerBehindQueued(_ command: Envelope, with reply: Envelope.OneOf_Body, on connection: WireConnection) {
        outgoingWritten.when(reaching: outgoingQueued) {
            connection.replyInBackground(to: command, with: reply)
        }
    }

    /// What a command that failed answers: its `BrokerError`, or the error as the scene's failure.
    private static func refusal(_ error: any Error) -> BrokerError {
        error as? BrokerError ?? BrokerError(.workerFailed, "\(error)")
    }

    /// Queues a scene change: merged into the one not sent yet, or announced to the sender.
    private func publish(_ update: Windowbroker_V1_SceneUpdate) {
        guard var pending = pendingSceneUpdate else {
            pendingSceneUpdate = update
            enqueue(.sceneUpdate)
            return
        }
        if update.hasUserActivity { pending.userActivity = update.userActivity }
        if !update.title.isEmpty { pending.title = update.title }
        if update.hasActivationConditions { pending.activationConditions = update.activationConditions }
        pendingSceneUpdate = pending
    }

    private func takeSceneUpdate() -> Windowbroker_V1_SceneUpdate? {
        defer { pendingSceneUpdate = nil }
        return pendingSceneUpdate
    }

    private func writeStorage(_ key: String, _ value: PlistValue?) {
        if pendingStorage == nil {
            pendingStorage = PendingStorage()
            enqueue(.storage)
        }
        pendingStorage?.record(key, value)
    }

    private func takeStorage() -> PendingStorage? {
        defer { pendingStorage = nil }
        return pendingStorage
    }

    /// The next update in the app's order: an event, a defaults change, or the notice that
    /// some were dropped (the defaults come with it; the rest the scene resynchronises itself).
    private func deliver(_ delivery: Windowbroker_V1_UpdateDelivery) throws {
        let (scene, delegate) = try requireScene()
        guard delivery.sequence > scene.lastUpdateSequence else { return }  // at most once
        scene.received(sequence: delivery.sequence)
        switch delivery.kind {
        case .event(let wire):
            let event = try UpdateEvent(wire: wire, sequence: delivery.sequence)
            delegate.didReceive(scene, update: event)
            scene.broadcast(event)
        case .defaultsChanged(let change):
            let value = change.removed ? nil : try PlistValue(wire: change.value, path: change.key)
            scene.defaults.apply(key: change.key, value: value)
        case .dropped(let dropped):
            scene.defaults.resync(try PlistValue.dictionary(wire: dropped.defaults, path: "defaults"))
            delegate.updatesDropped(scene, from: dropped.from, to: dropped.to)
        case nil:
            throw BrokerError(.invalidRequest, "an update delivery with nothing in it")
        }
    }

    private func updateRefused(_ error: BrokerError) {
        guard let scene, let delegate else { return }
        delegate.updateRefused(scene, error: error)
    }

    private func requireScene() throws -> (Scene, any SceneDelegate) {
        guard let scene, let delegate else { throw BrokerError(.invalidState, "the scene is not connected yet") }
        return (scene, delegate)
    }

    /// One lifecycle transition's callback and the state it leaves the scene in.
    private func runTransition(_ transition: Windowbroker_V1_LifecycleTransition) throws {
        let (scene, delegate) = try requireScene()
        switch transition.transition {
        case .willEnterForeground:
            scene.isProminent = transition.prominent
            delegate.willEnterForeground(scene)
            scene.state = .foregroundInactive
            windows.enterForeground(transition)
        case .didBecomeActive:
            scene.isProminent = transition.prominent
            delegate.didBecomeActive(scene)
            scene.state = .foregroundActive
        case .willResignActive:
            delegate.willResignActive(scene)
            scene.state = .foregroundInactive
        case .didEnterBackground:
            scene.isProminent = false
            delegate.didEnterBackground(scene)
            scene.state = .background
            windows.hide()
        case .unspecified, .UNRECOGNIZED:
            throw BrokerError(.invalidRequest, "unknown lifecycle transition")
        }
    }

    /// The transitions a command carries to run after it are checked before any runs: a
    /// command is carried out whole or refused, never left half done.
    private static func checkFollowers(_ followers: [Windowbroker_V1_LifecycleTransition]) throws {
        for follower in followers {
            guard follower.then.isEmpty else {
                throw BrokerError(.invalidRequest, "a transition that follows another may not carry transitions of its own")
            }
            switch follower.transition {
            case .willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground: continue
            case .unspecified, .UNRECOGNIZED: throw BrokerError(.invalidRequest, "unknown lifecycle transition")
            }
        }
    }

    private func perform(_ command: Windowbroker_V1_WorkerCommand.OneOf_Kind) async throws -> Windowbroker_V1_WorkerMessage.OneOf_Kind {
        switch command {
        case .connect(let connect):
            try Self.checkFollowers(connect.then)
            let configuration = connectScene(connect)
            for transition in connect.then { try runTransition(transition) }
            windows.updateDimming()
            return .connected(.with { $0.configuration = configuration })
        case .restoreInteractionState(let restore):
            let (scene, delegate) = try requireScene()
            let activity = try UserActivity(wire: restore.activity, maxBytes: .max)
            let request = RestorationRequest { [weak self] in self?.enqueue(.message(.restorationExtended(.init()))) }
            delegate.restoreInteractionState(scene, with: activity, restoration: request)
            await request.waitForCompletion()
            return .ack(.init())
        case .transition(let transition):
            try Self.checkFollowers(transition.then)
            try runTransition(transition)
            for next in transition.then { try runTransition(next) }
            windows.updateDimming()
            return .ack(.init())
        case .restorationActivityRequest:
            let (scene, delegate) = try requireScene()
            let activity = delegate.stateRestorationActivity(for: scene)
            let snapshot = windows.snapshot()
            return .restorationActivity(.with {
                if let activity { $0.activity = activity.wire }
                if let snapshot {
                    $0.snapshotPng = snapshot.png
                    if let thumbnail = snapshot.thumbnailPNG { $0.thumbnailPng = thumbnail }
                }
            })
        case .refresh:
            let (scene, delegate) = try requireScene()
            delegate.refresh(scene)
            return .sceneUpdate(.with {
                $0.title = scene.title
                if let activity = scene.userActivity { $0.userActivity = activity.wire }
            })
        case .continueActivity(let request):
            let (scene, delegate) = try requireScene()
            delegate.continue(scene, activity: try UserActivity(wire: request.activity, maxBytes: .max))
            return .ack(.init())
        case .performAction(let request):
            let (scene, delegate) = try requireScene()
            let arguments = try PlistValue.dictionary(wire: request.arguments, path: "arguments")
            return .actionResult(await delegate.perform(scene, action: SceneAction(name: request.action, arguments: arguments)).wire)
        case .update(let delivery):
            try deliver(delivery)
            return .ack(.init())
        case .performCommand(let request):
            let (scene, delegate) = try requireScene()
            let command = Command(id: request.command, shortcut: request.shortcut.isEmpty ? nil : request.shortcut)
            for link in scene.responderChain(scene: delegate, app: app) where link.responder.canPerform(command, in: scene) {
                let outcome = await link.responder.perform(command, in: scene)
                return .commandResult(.with {
                    $0.handledBy = link.level.rawValue
                    $0.element = link.element ?? ""
                    switch outcome {
                    case .performed(let value):
                        $0.performed = true
                        if let value { $0.value = value.wire }
                    case .declined(let reason):
                        $0.declineReason = reason
                    }
                })
            }
            return .commandResult(.init())
        case .validateCommands(let request):
            let (scene, delegate) = try requireScene()
            let chain = scene.responderChain(scene: delegate, app: app)
            return .commandStates(.with {
                $0.commands = request.commands.map { wire in
                    var answer = wire
                    let command = Command(id: wire.id, shortcut: nil)
                    guard let link = chain.first(where: { $0.responder.canPerform(command, in: scene) }) else {
                        answer.enabled = false
                        return answer
                    }
                    var validation = CommandValidation(id: wire.id, title: wire.title, state: .off)
                    link.responder.validate(&validation, in: scene)
                    answer.enabled = true
                    answer.handler = link.level.rawValue
                    answer.title = validation.title
                    answer.state = validation.state.rawValue
                    return answer
                }
            })
        case .disconnect(let disconnect):
            if let scene, let delegate {
                windows.hide()
                scene.finishUpdates()
                delegate.didDisconnect(scene)
                windows.destroy()
                if disconnect.discarded { app.didDiscardSceneSessions([scene.session.id]) }
            }
            finished = true
            return .ack(.init())
        case .memoryWarning(let warning):
            let (scene, delegate) = try requireScene()
            let freed = delegate.didReceiveMemoryWarning(scene, level: warning.level == .critical ? .critical : .warning)
            return .memoryWarning(.with { $0.freedBytes = UInt64(max(0, freed)) })
        case .discardSessions(let discard):
            app.didDiscardSceneSessions(discard.sessionIds.compactMap(SessionID.init))
            return .ack(.init())
        case .keyStatus(let status):
            let (scene, delegate) = try requireScene()
            // With a window the compositor says which scene has the keyboard; headless, the broker.
            if let asked = windows.keyStatus(isKey: status.isKey, token: status.activationToken) { return .keyStatus(asked) }
            if status.isKey != scene.isKey {
                scene.isKey = status.isKey
                if status.isKey { delegate.didBecomeKey(scene) } else { delegate.didResignKey(scene) }
            }
            return .ack(.init())
        }
    }

    /// The app's own menu additions, once per process, right after launch: queued before any
    /// command is answered, so the broker has them before it hears willConnect returned, and
    /// a prewarmed process has sent them before it is bound to a session.
    private func sendAppMenu() {
        var menu = MenuBuilder()
        app.buildMenu(with: &menu)
        guard !menu.operations.isEmpty else { return }
        enqueue(.appMenu(menu.request))
    }

    /// The app's launch, once: didFinishLaunching, then its menu additions, queued before
    /// anything a scene sends (a command read with the Hello's answer may run first).
    private func finishLaunchingIfNeeded() {
        guard !launched else { return }
        launched = true
        app.didFinishLaunching()
        sendAppMenu()
    }

    /// App launch (once), pending discards, configuration, then willConnect.
    private func connectScene(_ connect: Windowbroker_V1_ConnectScene) -> String {
        finishLaunchingIfNeeded()
        if !connect.discardedSessionIds.isEmpty {
            app.didDiscardSceneSessions(connect.discardedSessionIds.compactMap(SessionID.init))
        }
        let info = connect.session
        let restoration = connect.hasRestorationActivity ? try? UserActivity(wire: connect.restorationActivity, maxBytes: .max) : nil
        var session = SceneSessionInfo(
            id: SessionID(info.id) ?? SessionID(), appID: AppID(info.appID), configuration: info.configuration, role: info.role,
            title: info.title, restorationActivity: restoration, delegateName: connect.delegateName,
            isNew: connect.newSession)
        let options = ConnectionOptions(userActivities: connect.userActivities.compactMap { try? UserActivity(wire: $0, maxBytes: .max) })
        // Asked once, when the session is new: a reconnecting scene keeps its configuration.
        if connect.newSession, let chosen = app.configurationName(forConnecting: session, options: options),
           connect.availableConfigurations.contains(chosen) {
            session.configuration = chosen
        }
        let connection = self.connection
        let sync = SyncSnapshot(
            defaults: (try? PlistValue.dictionary(wire: connect.defaults, path: "defaults")) ?? [:],
            storage: (try? PlistValue.dictionary(wire: connect.storage, path: "storage")) ?? [:],
            sequence: connect.updateSequence)
        let scene = Scene(session: session, sync: sync, publisher: { [weak self] update in
            // Scene is main-actor isolated: its publisher is called there.
            MainActor.assumeIsolated { self?.publish(update) }
        }, requester: { request in
            try await Self.controlRequest(request, over: connection, timeout: .seconds(60))
        }, orderedRequester: { [weak self] request in
            guard let self else { throw BrokerError(.connectionClosed, "the scene is not connected to the broker") }
            return try await self.orderedRequest(request)
        }, storageWriter: { [weak self] key, value in
            self?.writeStorage(key, value)
        })
        let delegate = app.makeSceneDelegate(for: session)
        scene.defaults.onChange = { [weak scene, weak delegate] key, value in
            guard let scene, let delegate else { return }
            delegate.defaultsDidChange(scene, key: key, value: value)
        }
        scene.defaults.onRefused = { [weak scene, weak delegate] error in
            guard let scene, let delegate else { return }
            delegate.updateRefused(scene, error: error)
        }
        self.scene = scene
        self.delegate = delegate
        windows.make(for: scene) { [weak self] in self?.delegate }
        delegate.willConnect(to: scene, options: options)
        windows.showPlaceholder(connect.placeholderPng)
        return session.configuration
    }

    /// A shortcut from the window, for the broker to perform (`wmctl key`); it answers once
    /// the command is done, so the next shortcut waits for it. A shortcut no command has is
    /// answered too, and nothing more happens.
    private func performShortcut(_ shortcut: KeyShortcut) async {
        guard let connection else { return }
        _ = try? await connection.request(
            .workerMessage(.with { $0.keyInput = .with { $0.shortcut = shortcut.description } }), timeout: .seconds(30), what: "the broker")
    }
}
