import Foundation
import IPCWire
import WindowBroker
import WindowBrokerTesting
import XCTest

/// Interleavings that process tests can only hit by timing, made deterministic: the broker
/// runs in this process and each fake worker's command is held until the test lets it go.
final class InProcessBrokerTests: XCTestCase {
    private var running: InProcessBroker!

    override func tearDown() async throws {
        await running?.stop()
        running = nil
    }

    private func start(workerTimeout: Duration = .seconds(5)) async throws -> InProcessBroker {
        running = try await InProcessBroker.start(apps: [.init("alpha"), .init("beta")]) {
            $0.workerTimeout = workerTimeout
            $0.maxForegroundScenes = 2
        }
        return running
    }

    /// A command that asks for `transition`, alone or carried by the command before it (a
    /// scene opened in front gets willConnect, willEnterForeground and didBecomeActive at once).
    private static func isTransition(_ transition: Windowbroker_V1_Transition) -> @Sendable (WorkerCommandKind) -> Bool {
        { kind in
            switch kind {
            case .transition(let t): t.transition == transition || t.then.contains { $0.transition == transition }
            case .connect(let connect): connect.then.contains { $0.transition == transition }
            default: false
            }
        }
    }

    /// The control handshake's deadline (a timer in the connection's pipeline): a peer that
    /// says no Hello is told why and closed; one that did is not touched by it.
    func testAControlPeerThatSaysNoHelloIsClosedAtTheDeadline() async throws {
        running = try await InProcessBroker.start(apps: [.init("alpha")]) { $0.handshakeTimeout = .milliseconds(300) }
        let silent = try RawSocket(path: running.socketPath)
        let greeted = try RawSocket(path: running.socketPath)
        try greeted.greet()
        let answer = try XCTUnwrap(silent.readFrame(), "no word from the broker within 10 s")
        guard case .error(let error) = answer.body else { return XCTFail("expected an error, got \(answer)") }
        XCTAssertEqual(error.code, .handshakeRequired)
        XCTAssertTrue(error.message.contains("no Hello within"), error.message)
        XCTAssertTrue(silent.isClosedByPeer())
        try greeted.write(frame: .with { $0.id = 2; $0.controlRequest = .with { $0.ping = .with { $0.payload = Data("still here".utf8) } } })
        let pong = try XCTUnwrap(greeted.readFrame())
        guard case .controlReply(let reply) = pong.body, case .ping(let ping) = reply.kind else { return XCTFail("expected a ping reply, got \(pong)") }
        XCTAssertEqual(ping.payload, Data("still here".utf8))
    }

    /// Requests written all at once, right behind a Hello with no id (as the Python module
    /// writes it), are answered once each, in order, whichever side of the broker's connection
    /// takes them: the pipeline answers one request at a time while the rest wait (past 16
    /// the socket is not read), and the reading task takes what is not a plain request.
    func testRequestsWrittenAtOnceAreAnsweredOnceEachInOrder() async throws {
        let running = try await start()
        let raw = try RawSocket(path: running.socketPath)
        var hello = RawSocket.hello()
        hello.id = 0
        let kinds: [Windowbroker_V1_ControlRequest] = [
            .with { $0.status = .init() },
            .with { $0.apps = .init() },
            .with { $0.ping = .with { $0.payload = Data([7]) } },
            .with { $0.activate = .with { $0.sessionID = UUID().uuidString } },
            Windowbroker_V1_ControlRequest(),  // no request kind
        ]
        var bytes: [UInt8] = []
        for frame in [hello] + (0..<60).map({ i in Envelope.with { $0.id = UInt64(100 + i); $0.controlRequest = kinds[i % kinds.count] } }) {
            bytes += try RawSocket.frame(frame)
        }
        XCTAssertTrue(raw.write(bytes))
        guard case .welcome? = raw.readFrame()?.body else { return XCTFail("no Welcome first") }
        for i in 0..<60 {
            let reply = try XCTUnwrap(raw.readFrame(), "reply \(i)")
            XCTAssertEqual(reply.replyTo, UInt64(100 + i), "reply \(i) out of order")
            switch (i % kinds.count, reply.body) {
            case (0, .controlReply(let r)): guard case .status = r.kind else { return XCTFail("\(i): \(r)") }
            case (1, .controlReply(let r)): guard case .apps = r.kind else { return XCTFail("\(i): \(r)") }
            case (2, .controlReply(let r)): guard case .ping = r.kind else { return XCTFail("\(i): \(r)") }
            case (3, .error(let e)): XCTAssertEqual(e.code, .unknownSession)
            case (4, .error(let e)): XCTAssertEqual(e.code, .invalidRequest)
            default: return XCTFail("reply \(i): \(reply)")
            }
        }
    }

    /// A watch is served by the connection's reading task and a request after it on the same
    /// connection by the event loop: both are answered, and the watch's events keep coming.
    func testARequestAfterAWatchOnOneConnectionIsAnsweredAndEventsKeepComing() async throws {
        let running = try await start()
        let raw = try RawSocket(path: running.socketPath)
        try raw.greet()
        try raw.write(frame: .with { $0.id = 1; $0.controlRequest = .with { $0.watch = .with { $0.events = ["created"] } } })
        try raw.write(frame: .with { $0.id = 2; $0.controlRequest = .with { $0.apps = .init() } })
        let watching = try XCTUnwrap(raw.readFrame())
        XCTAssertEqual(watching.replyTo, 1)
        guard case .controlReply(let started) = watching.body, case .watchStarted = started.kind else { return XCTFail("\(watching)") }
        let apps = try XCTUnwrap(raw.readFrame())
        XCTAssertEqual(apps.replyTo, 2)
        guard case .controlReply(let listed) = apps.body, case .apps = listed.kind else { return XCTFail("\(apps)") }
        let opened = try await openScene("alpha", on: running.broker)
        let event = try XCTUnwrap(raw.readFrame())
        guard case .lifecycleEvent(let created) = event.body else { return XCTFail("\(event)") }
        XCTAssertEqual(created.sessionID, opened.sessionID.description)
        try raw.write(frame: .with { $0.id = 3; $0.controlRequest = .with { $0.ping = .with { $0.payload = Data([3]) } } })
        let pong = try XCTUnwrap(raw.readFrame())
        XCTAssertEqual(pong.replyTo, 3)
    }

    /// A new session's record is inserted without a sync of its own, and the open answers
    /// only once a synced commit came after it. A fake scene reports nothing in its callbacks,
    /// so no report's commit syncs it here: the open syncs the record itself.
    func testAnOpenAnswersOnceItsSessionIsOnDisk() async throws {
        let running = try await start()
        let broker = running.broker
        let before = broker.storeCommits
        _ = try await openScene("alpha", on: broker)
        let after = broker.storeCommits
        XCTAssertGreaterThan(after.onDisk, before.all, "no synced commit after the insert: \(before) then \(after)")
    }

    /// A scene that an open pushes out of the foreground (two in front at most here) goes
    /// only once the new scene is active: the scene asked for gets the CPU and the store first,
    /// and no window leaves before the one replacing it is there. The open's answer still
    /// comes after the push.
    func testAScenePushedOutByAnOpenGoesOnlyOnceTheNewSceneIsActive() async throws {
        let running = try await start()
        let broker = running.broker
        let oldest = try await openScene("beta", on: broker)
        _ = try await openScene("alpha", on: broker)
        var held = await running.workers.hold(app: "alpha") { if case .connect = $0 { true } else { false } }.makeAsyncIterator()
        let third = Task { try await openScene("alpha", on: broker) }
        let connect = try await XCTUnwrapAsync(await held.next())
        let betaWorker = try await XCTUnwrapAsync(await running.workers.workers.first { $0.appID == "beta" })
        // Anything decided for beta would have been sent by now; it waits for the new scene.
        try await Task.sleep(for: .milliseconds(300))
        let whileConnecting = await betaWorker.received
        XCTAssertFalse(whileConnecting.contains("willResignActive"), "\(whileConnecting)")
        let stateWhileConnecting = try await sceneState(oldest.sessionID, broker)
        XCTAssertEqual(stateWhileConnecting, .foregroundActive)

        await connect.answer()
        let opened = try await InProcessBroker.withDeadline(.seconds(10)) { try await third.value }
        XCTAssertEqual(opened.state, .foregroundActive)
        let stateAfterwards = try await sceneState(oldest.sessionID, broker)
        XCTAssertEqual(stateAfterwards, .background, "pushed out by the time the open answers")
        let afterwards = await betaWorker.received
        XCTAssertTrue(afterwards.contains("willResignActive"), "\(afterwards)")
    }

    func testAnOpenWaitingOnItsSceneDoesNotHoldUpAnotherApp() async throws {
        let running = try await start()
        let broker = running.broker
        var held = await running.workers.hold(app: "alpha") { if case .connect = $0 { true } else { false } }.makeAsyncIterator()
        let alpha = Task { try await openScene("alpha", on: broker) }
        let connect = try await XCTUnwrapAsync(await held.next())
        XCTAssertEqual(connect.name, "connect")

        // alpha's scene sits in willConnect; beta opens from start to active meanwhile.
        let beta = try await openScene("beta", on: broker)
        XCTAssertEqual(beta.state, .foregroundActive)

        await connect.answer()
        let opened = try await alpha.value
        // Both are visible, so both are active; the later request has the keyboard.
        XCTAssertEqual(opened.state, .foregroundActive)
        let betaState = try await sceneState(beta.sessionID, broker)
        XCTAssertEqual(betaState, .foregroundActive)
        try await eventually("beta is the key scene") { try await broker.sessionStatus(beta.sessionID).isKey }
        let alphaWorker = try await XCTUnwrapAsync(await running.workers.workers.first { $0.appID == "alpha" })
        let received = await alphaWorker.received
        XCTAssertEqual(received, ["connect", "willEnterForeground", "didBecomeActive"], "alpha was never key")

        // Activating alpha moves only the keyboard: beta stays active beside it.
        let activated = try await broker.activate(opened.sessionID)
        XCTAssertEqual(activated.state, .foregroundActive)
        try await eventually("beta resigned key") { try await !broker.sessionStatus(beta.sessionID).isKey }
        let betaAfter = try await sceneState(beta.sessionID, broker)
        XCTAssertEqual(betaAfter, .foregroundActive)
        let alphaInfo = try await broker.sessionStatus(opened.sessionID)
        XCTAssertTrue(alphaInfo.isKey)
        let betaWorker = try await XCTUnwrapAsync(await running.workers.workers.first { $0.appID == "beta" })
        // The broker's record of the key moves first; the scene hears it in its session's turn.
        try await eventually("beta heard it lost the keyboard") { await betaWorker.received.last == "didResignKey" }
        let betaReceived = await betaWorker.received
        XCTAssertEqual(betaReceived.suffix(2), ["didBecomeKey", "didResignKey"])
    }

    /// The transitions that follow each other go to the scene in one command: a new scene gets
    /// willConnect with willEnterForeground and didBecomeActive, one coming back from the
    /// background willEnterForeground with didBecomeActive, one leaving willResignActive with
    /// didEnterBackground; the save is a command of its own (its answer is committed).
    func testTransitionsThatFollowEachOtherGoToTheSceneInOneCommand() async throws {
        let running = try await start()
        let broker = running.broker
        let opened = try await openScene("alpha", on: broker)
        _ = try await broker.background(opened.sessionID)
        let back = try await broker.activate(opened.sessionID)
        XCTAssertEqual(back.state, .foregroundActive)
        let worker = try await XCTUnwrapAsync(await running.workers.workers.first { $0.appID == "alpha" })
        let commands = await worker.commands.filter { !$0.contains("didBecomeKey") && !$0.contains("didResignKey") }
        XCTAssertEqual(commands, [
            ["connect", "willEnterForeground", "didBecomeActive"],
            ["willResignActive", "didEnterBackground"],
            ["saveRestorationActivity"],
            ["willEnterForeground", "didBecomeActive"],
        ])
    }

    /// A scene still being told didBecomeActive when a later one comes forward is not made key
    /// afterwards: the key is the later scene's, decided when it was asked for.
    func testASceneStillBecomingActiveDoesNotTakeTheKeyFromALaterOne() async throws {
        let running = try await start()
        let broker = running.broker
        var held = await running.workers.hold(app: "alpha", Self.isTransition(.didBecomeActive)).makeAsyncIterator()
        let alpha = Task { try await openScene("alpha", on: broker) }
        let becoming = try await XCTUnwrapAsync(await held.next())
        // beta's record takes a while to store: alpha answers while it is being inserted.
        // Focus moves to beta in the turn its request comes, not once it is stored.
        let slowInsert = Process()
        slowInsert.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        slowInsert.arguments = [running.directory + "/state/state.sqlite", """
            CREATE TRIGGER slow_beta BEFORE INSERT ON session WHEN NEW.appID = 'beta' BEGIN
                SELECT count(*) FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3000000) SELECT x FROM n);
            END;
            """]
        try slowInsert.run()
        slowInsert.waitUntilExit()
        XCTAssertEqual(slowInsert.terminationStatus, 0)
        let beta = Task { try await openScene("beta", on: broker) }
        // beta's request is in (its process started) while alpha still waits to be active.
        try await eventually("beta's open has come forward") { await running.workers.workers.contains { $0.appID == "beta" } }
        await becoming.answer()
        let (alphaOutcome, betaOutcome) = try await InProcessBroker.withDeadline(.seconds(10)) { (try await alpha.value, try await beta.value) }
        XCTAssertEqual(alphaOutcome.state, .foregroundActive)
        XCTAssertEqual(betaOutcome.state, .foregroundActive)
        try await eventually("beta is the key scene") { try await broker.sessionStatus(betaOutcome.sessionID).isKey }
        let alphaInfo = try await broker.sessionStatus(alphaOutcome.sessionID)
        XCTAssertFalse(alphaInfo.isKey)
        XCTAssertEqual(alphaInfo.session.state, .foregroundActive, "alpha stays active beside beta")
        let alphaWorker = try await XCTUnwrapAsync(await running.workers.workers.first { $0.appID == "alpha" })
        let received = await alphaWorker.received
        XCTAssertFalse(received.contains("didBecomeKey"), "\(received)")
    }

    /// Issue 19, hazard 2. Before: each connect read the pending discards across a suspension
    /// and removed them only after its round trip, so both scenes were told.
    func testAPendingDiscardIsDeliveredToOneOfTwoScenesConnectingAtOnce() async throws {
        let running = try await start()
        let broker = running.broker
        let gone = try await openScene("alpha", on: broker)
        _ = try await broker.background(gone.sessionID)
        _ = try await broker.reclaim(gone.sessionID)
        _ = try await broker.close(gone.sessionID)  // no alpha scene runs: remembered for the next launch

        var held = await running.workers.hold(app: "alpha") { if case .connect = $0 { true } else { false } }.makeAsyncIterator()
        let first = Task { try await openScene("alpha", on: broker) }
        let second = Task { try await openScene("alpha", on: broker) }
        let connects = [try await XCTUnwrapAsync(await held.next()), try await XCTUnwrapAsync(await held.next())]
        let told = connects.map { command -> [String] in
            if case .connect(let connect) = command.kind { return connect.discardedSessionIds } else { return [] }
        }
        XCTAssertEqual(told.flatMap { $0 }, [gone.sessionID.description], "exactly one scene is told: \(told)")
        for command in connects { await command.answer() }
        _ = try await (first.value, second.value)
    }

    /// Issue 19, hazard 5. Before: the worker limit was checked before taking a prewarmed
    /// worker (a suspension) and counted after it, so two launches at once both got through.
    func testLaunchesAtOnceNeverPassTheWorkerLimit() async throws {
        running = try await InProcessBroker.start(apps: [.init("gamma", prewarm: 2)]) { $0.maxLiveWorkers = 3 }
        let broker = running.broker
        try await eventually("the pool is full") { await broker.prewarmedCount("gamma") == 2 }
        let opens = (0..<16).map { _ in Task { try await openScene("gamma", on: broker) } }
        var refused: [BrokerError.Code] = []
        var opened = 0
        for task in opens {
            do {
                _ = try await task.value
                opened += 1
            } catch let error as BrokerError {
                refused.append(error.code)
            }
        }
        XCTAssertEqual(opened, 3, "refused: \(refused)")
        XCTAssertEqual(Set(refused), [.resourceExhausted])
        let live = await broker.sessionStatuses(app: "gamma").filter { $0.pid != nil }.count
        XCTAssertEqual(live, 3)
    }

    /// The crash loop's wait, on a clock the test moves: refused until the wait is over, to the
    /// instant, then launched; a second loop in a row waits twice as long. Nothing sleeps.
    func testACrashLoopEndsExactlyWhenItsWaitIsOver() async throws {
        let clock = ManualClock()
        running = try await InProcessBroker.start(apps: [.init("alpha")]) {
            $0.clock = clock
            $0.startLimitBurst = 3
            $0.startLimitInterval = .seconds(10)
        }
        let broker = running.broker
        func refusal() async -> BrokerError? {
            do { _ = try await openScene("alpha", on: broker); return nil } catch { return error as? BrokerError }
        }
        func loop() async throws {
            await running.workers.failLaunches(with: BrokerError(.workerFailed, "the executable is missing"))
            for _ in 0..<3 {
                let code = await refusal()?.code
                XCTAssertEqual(code, .workerFailed)
            }
            await running.workers.failLaunches(with: nil)
        }
        try await loop()
        let refused = try await XCTUnwrapAsync(await refusal())
        XCTAssertEqual(refused.code, .crashLoop)
        XCTAssertEqual(refused.retryAfterSeconds, 10)
        clock.advance(by: .seconds(9))
        var wait = await refusal()?.retryAfterSeconds
        XCTAssertEqual(wait, 1, "still refused a second before the end")
        clock.advance(by: .seconds(1))
        let launched = await refusal()
        XCTAssertNil(launched, "launched once the wait is over")

        // The launch that worked ended the streak; a scene that then crashes does not, and
        // failing again at once is a second loop in a row only without a success between.
        try await loop()
        wait = await refusal()?.retryAfterSeconds
        XCTAssertEqual(wait, 10, "a success in between: the first loop again")
        clock.advance(by: .seconds(10))
        try await loop()
        wait = await refusal()?.retryAfterSeconds
        XCTAssertEqual(wait, 20, "a second loop in a row waits twice as long")
    }

    /// Issue 24, item 11, on a clock the test moves. Before: a pool whose refills put its app
    /// in a crash loop was never refilled again (nothing was scheduled for the loop's end).
    /// Now no refill comes during the wait, not even a moment before its end, and the pool is
    /// full again the moment it is over.
    func testAPoolInACrashLoopIsRefilledExactlyWhenTheWaitIsOver() async throws {
        let clock = ManualClock()
        let workers = FakeWorkers()
        await workers.failLaunches(with: BrokerError(.workerFailed, "the executable is missing"))
        running = try await InProcessBroker.start(apps: [.init("doomed", prewarm: 2)], workers: workers) {
            $0.clock = clock
            $0.startLimitBurst = 3
            $0.startLimitInterval = .seconds(20)
        }
        let broker = running.broker
        // Two failed refills are not a loop yet: the pool tries again in half a second.
        try await eventually("two launches failed and a retry is scheduled") {
            await workers.launchAttempts == 2 && clock.sleeperCount == 1
        }
        clock.advance(by: .milliseconds(500))
        try await eventually("the third failure starts the crash loop, and the refill waits for its end") {
            await workers.launchAttempts == 4 && clock.sleeperCount == 1
        }
        await workers.failLaunches(with: nil)
        clock.advance(by: .seconds(19) + .milliseconds(999))
        // Nothing was woken (the one sleeper is still asleep): no refill can have started.
        XCTAssertEqual(clock.sleeperCount, 1)
        let during = await workers.launchAttempts
        XCTAssertEqual(during, 4, "no refill during the crash loop's wait")
        clock.advance(by: .milliseconds(1))
        try await eventually("the pool is full again once the wait is over") { await broker.prewarmedCount("doomed") == 2 }
        let after = await workers.launchAttempts
        XCTAssertEqual(after, 6)
    }

    /// A prefix from a scene matches only its own app's sessions, and a miss lists none of the
    /// others (issue 24): a scene cannot even learn that another app's session exists.
    func testAScenesPrefixMatchesOnlyItsOwnAppsSessions() async throws {
        let running = try await start()
        let alpha = try await openScene("alpha", on: running.broker).sessionID
        let beta = try await openScene("beta", on: running.broker).sessionID
        let prefix = String(alpha.description.prefix(8))
        let resolved = try await running.broker.resolveSession(prefix)
        XCTAssertEqual(resolved, alpha, "wmctl (no requester) matches any app's session")
        let own = try await running.broker.resolveSession(prefix, visibleTo: alpha)
        XCTAssertEqual(own, alpha)
        do {
            _ = try await running.broker.resolveSession(prefix, visibleTo: beta)
            XCTFail("another app's session was matched by a prefix")
        } catch {
            XCTAssertEqual(error.code, .unknownSession)
            XCTAssertFalse(error.message.contains(alpha.description), error.message)
        }
    }

    func testAReplyAfterItsDeadlineChangesNothing() async throws {
        let running = try await start(workerTimeout: .milliseconds(300))
        let broker = running.broker
        let opened = try await openScene("alpha", on: broker)
        var held = await running.workers.hold(app: "alpha", Self.isTransition(.didEnterBackground)).makeAsyncIterator()
        let background = Task { try await broker.background(opened.sessionID) }
        let late = try await XCTUnwrapAsync(await held.next())

        do {
            _ = try await background.value
            XCTFail("a missed deadline must be an error")
        } catch let error as BrokerError {
            XCTAssertEqual(error.code, .timedOut, error.message)
        }
        let info = try await broker.sessionStatus(opened.sessionID)
        XCTAssertEqual(info.session.state, .unattached)
        XCTAssertEqual(info.session.lastDisconnect?.description, "timedOut")
        let ended = await late.worker.hasEnded
        XCTAssertTrue(ended, "the scene that missed its deadline was stopped")

        // The answer arrives after all: nobody waits for it, nothing moves.
        await late.answer()
        let after = try await broker.sessionStatus(opened.sessionID)
        XCTAssertEqual(after.session.state, .unattached)
        XCTAssertEqual(after.session.launchCount, 1)

        // The session comes back with a new process.
        let again = try await broker.activate(opened.sessionID)
        XCTAssertEqual(again.state, .foregroundActive)
        XCTAssertEqual(again.launch, .spawned)
    }

    /// A post is written to every idle scene before any of them answers; a scene has one update
    /// in flight at a time, the next sent once it answered; a scene that dies with an update
    /// unanswered is reported as such and holds up nobody.
    func testAPostReachesEverySceneAtOnceAndEachSceneTakesOneUpdateAtATime() async throws {
        let running = try await start()
        let broker = running.broker
        let first = try await openScene("alpha", on: broker).sessionID
        let second = try await openScene("alpha", on: broker).sessionID
        var held = await running.workers.hold(app: "alpha") { if case .update = $0 { true } else { false } }.makeAsyncIterator()

        let one = Task { try await broker.post(app: "alpha", name: "one", payload: [:], from: nil, wait: .seconds(20)) }
        let oneA = try await XCTUnwrapAsync(await held.next())
        let oneB = try await XCTUnwrapAsync(await held.next())
        XCTAssertEqual(Set([oneA.worker.sessionID, oneB.worker.sessionID]), [first, second], "both scenes have the update while neither answered")
        let (answering, dying) = (try XCTUnwrap(oneA.worker.sessionID), try XCTUnwrap(oneB.worker.sessionID))

        let two = Task { try await broker.post(app: "alpha", name: "two", payload: [:], from: nil, wait: .seconds(20)) }
        try await eventually("the second post is made") { await broker.status().updatesPosted == 2 }
        await oneA.answer()
        let twoA = try await XCTUnwrapAsync(await held.next())
        XCTAssertIdentical(twoA.worker, oneA.worker, "only the scene that answered gets the next update")
        let other = await oneB.worker.received.filter { $0.hasPrefix("update:") }
        XCTAssertEqual(other.count, 1, "a scene with an update unanswered is sent nothing more: \(other)")
        await oneB.answer()
        let twoB = try await XCTUnwrapAsync(await held.next())
        XCTAssertIdentical(twoB.worker, oneB.worker)
        let firstOutcome = try await one.value
        XCTAssertEqual(Set(firstOutcome.acknowledged.keys), [first, second])
        XCTAssertEqual(firstOutcome.unacknowledged, [])

        // One scene answers, the other dies with the update unanswered.
        await twoA.answer()
        await twoB.worker.die(.signaled(SIGKILL))
        let secondOutcome = try await two.value
        XCTAssertEqual(Set(secondOutcome.acknowledged.keys), [answering])
        XCTAssertEqual(secondOutcome.unacknowledged, [dying])

        // The scene that answered takes the next update at once.
        let three = Task { try await broker.post(app: "alpha", name: "three", payload: [:], from: nil, wait: .seconds(20)) }
        let threeA = try await XCTUnwrapAsync(await held.next())
        XCTAssertIdentical(threeA.worker, twoA.worker)
        await threeA.answer()
        let thirdOutcome = try await three.value
        XCTAssertEqual(thirdOutcome.receivers, 1)
        XCTAssertEqual(Set(thirdOutcome.acknowledged.keys), [answering])
    }

    func testAProcessThatDiesWhileBecomingActiveGivesTheKeyBack() async throws {
        let running = try await start()
        let broker = running.broker
        // beta has been open before: a session that never finished connecting would not be kept.
        let earlier = try await openScene("beta", on: broker)
        _ = try await broker.background(earlier.sessionID)
        let alpha = try await openScene("alpha", on: broker)
        var held = await running.workers.hold(app: "beta", Self.isTransition(.didBecomeActive)).makeAsyncIterator()
        let beta = Task { try await broker.activate(earlier.sessionID) }
        let becoming = try await XCTUnwrapAsync(await held.next())
        // alpha stays active; the keyboard is on its way to beta.
        let meanwhile = try await sceneState(alpha.sessionID, broker)
        XCTAssertEqual(meanwhile, .foregroundActive)

        await becoming.worker.die(.signaled(SIGSEGV))
        do {
            _ = try await beta.value
            XCTFail("a scene that crashed during didBecomeActive cannot have opened")
        } catch let error as BrokerError {
            XCTAssertEqual(error.code, .workerFailed, error.message)
        }
        try await eventually("the key went back to alpha") { try await broker.sessionStatus(alpha.sessionID).isKey }
        let alphaState = try await sceneState(alpha.sessionID, broker)
        XCTAssertEqual(alphaState, .foregroundActive)
        let sessions = await broker.sessionStatuses(app: "beta")
        XCTAssertEqual(sessions.count, 1, "the session is kept, unattached")
        let kept = try XCTUnwrap(sessions.first)
        XCTAssertEqual(kept.session.state, .unattached)
        XCTAssertEqual(kept.session.lastDisconnect?.description, "crashed(SIGSEGV)")
    }

    func testASocketClosedDuringAStepStopsTheProcess() async throws {
        let running = try await start()
        let broker = running.broker
        var held = await running.workers.hold(app: "alpha", Self.isTransition(.willEnterForeground)).makeAsyncIterator()
        let alpha = Task { try await openScene("alpha", on: broker) }
        let entering = try await XCTUnwrapAsync(await held.next())
        await entering.worker.closeConnection()
        do {
            _ = try await alpha.value
            XCTFail("the scene lost its connection during willEnterForeground")
        } catch let error as BrokerError {
            XCTAssertEqual(error.code, .workerFailed, error.message)
        }
        // The "process" kept running after its socket closed: the supervisor stopped it.
        try await eventually("the process was stopped") { await entering.worker.hasEnded }
        let status = await broker.status()
        XCTAssertEqual(status.workers, 0)
    }

    func testTwoActivationsOfOneSessionLaunchItOnce() async throws {
        let running = try await start()
        let broker = running.broker
        let opened = try await openScene("alpha", on: broker)
        _ = try await broker.background(opened.sessionID)
        _ = try await broker.reclaim(opened.sessionID)
        var held = await running.workers.hold(app: "alpha") { if case .connect = $0 { true } else { false } }.makeAsyncIterator()
        let first = Task { try await broker.activate(opened.sessionID) }
        let connect = try await XCTUnwrapAsync(await held.next())
        let second = Task { try await broker.activate(opened.sessionID) }
        await connect.answer()
        let (a, b) = (try await first.value, try await second.value)
        XCTAssertEqual(a.launch, .spawned)
        XCTAssertEqual(b.launch, .existing, "the second request ran after the first, in arrival order")
        let launched = await running.workers.workers.filter { $0.sessionID == opened.sessionID || $0.appID == "alpha" }
        XCTAssertEqual(launched.count, 2, "one process before the reclaim, one after: never two at once")
    }

    func testTheSameMenuFromEveryLaunchNeverUsesUpTheAppsChanges() async throws {
        let running = try await start()
        let insert = Windowbroker_V1_MenuOperation.with {
            $0.insert = .with {
                $0.childOf = "view"
                $0.element = .with { $0.command = .with { $0.id = "alpha.count"; $0.title = "Count" } }
            }
        }
        // More launches than the limit on an app's runtime changes (1,024), each with its menu.
        for launch in 1...1_100 {
            do { _ = try await running.broker.changeMenu(app: "alpha", operations: [insert]) } catch {
                return XCTFail("launch \(launch): \(error)")
            }
        }
        let remove = Windowbroker_V1_MenuOperation.with { $0.remove = "alpha.count" }
        let menu = try await running.broker.changeMenu(app: "alpha", operations: [remove])
        XCTAssertFalse("\(menu)".contains("alpha.count"), "a change that does change the menu still applies")
    }

    func testTheControlServerAnswersInProcess() async throws {
        let running = try await start()
        let (ping, opened) = try await running.withClient { client in
            let ping = try await client.request(.ping(.with { $0.payload = Data("x".utf8) }))
            let opened = try await client.request(.open(.with { $0.appID = "beta" }))
            return (ping, opened)
        }
        guard case .ping(let pong) = ping, case .sessionState(let state) = opened else { return XCTFail("\(ping) \(opened)") }
        XCTAssertEqual(pong.payload, Data("x".utf8))
        XCTAssertEqual(SceneState(wire: state.state), .foregroundActive)
        XCTAssertEqual(state.launch, .spawned)
    }
}

func openScene(_ app: AppID, on broker: Broker) async throws -> SessionOutcome {
    try await broker.open(ActivationRequest(appID: app, sessionID: nil, activity: nil, forceNew: true))
}

/// Waits for something the broker does in its own time (a key change is told in the scene's
/// turn, after the request that decided it has been answered).
func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
    for _ in 0..<500 {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    XCTFail("timed out waiting until \(what)")
}

private func sceneState(_ id: SessionID, _ broker: Broker) async throws -> SceneState {
    try await broker.sessionStatus(id).session.state
}

func XCTUnwrapAsync<T>(_ value: @autoclosure () async throws -> T?, file: StaticString = #filePath, line: UInt = #line) async throws -> T {
    let unwrapped = try await value()
    return try XCTUnwrap(unwrapped, file: file, line: line)
}
