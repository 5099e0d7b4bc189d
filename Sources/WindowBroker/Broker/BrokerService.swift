import Foundation
import IPCWire
import Logging
import ServiceLifecycle
import UnixSignals

/// The broker as a swift-service-lifecycle `Service`: serves the control socket until a
/// graceful shutdown (SIGTERM/SIGINT), then snapshots and stops every scene. Tells systemd
/// READY=1 once the socket accepts (the store was opened before), keeps STATUS= current, pets
/// the watchdog from the broker's own executor, reloads manifests on SIGHUP.
public struct BrokerService: Service {
    public let broker: Broker
    let listener: ControlServer.Listener
    let notifier: SystemdNotifier
    let logger: Logger

    public init(broker: Broker, listener: ControlServer.Listener, notifier: SystemdNotifier = SystemdNotifier(), logger: Logger) {
        self.broker = broker
        self.listener = listener
        self.notifier = notifier
        self.logger = logger
    }

    public func run() async throws {
        let server = ControlServer(broker: broker, listener: listener, logger: logger)
        let notifier = self.notifier
        let broker = self.broker
        let logger = self.logger
        // Trapped before the server starts, so before READY=1: a SIGHUP sent as soon as the
        // broker says it is ready (a package's post-install step, a test installing an app)
        // reloads the manifests. Trapped in the task that reads it, it could arrive while
        // SIGHUP still had its default action, which ends the process (it showed as a test
        // waiting 20 s for an app it had just installed, the broker's log ending at "ready").
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await server.run {
                        let status = await broker.statusLine
                        logger.info("ready", metadata: ["status": "\(status)", "BROKER_PID": "\(getpid())"])
                        notifier.ready(status: status)
                        if broker.configuration.restoreWorkspace {
                            Task { await broker.restoreWorkspace() }
                        }
                    }
                }
                if notifier.isEnabled {
                    group.addTask {
                        // STATUS= follows the broker's events, a tenth of a second behind: the
                        // line is made once for an open's ten events, after the open.
                        let changes = EventBatches<Void>(window: .milliseconds(100), on: broker.requestLoop)
                        _ = await broker.subscribe(batching: changes) { _ in () }
                        var last = await broker.statusLine
                        for await _ in changes {
                            let line = await broker.statusLine
                            if line != last {
                                last = line
                                notifier.status(line)
                            }
                        }
                    }
                }
                if broker.configuration.sessionBus {
                    group.addTask {
                        await SessionBusFace(broker: broker, logger: logger).run(address: nil)
                        // Without a bus (or once it went away) the broker serves on: this task
                        // waits for the end like the others.
                        while !Task.isCancelled { try? await WireRuntime.sleep(for: .seconds(3600)) }
                    }
                }
                let monitor = MemoryMonitor(broker: broker, logger: logger)
                group.addTask { await monitor.run() }
                if let interval = SystemdNotifier.watchdogInterval() {
                    group.addTask {
                        // Petting goes through the broker's executor: a wedged broker stops petting.
                        while true {
                            try await WireRuntime.sleep(for: interval)
                            await broker.heartbeat()
                            notifier.watchdog()
                        }
                    }
                }
                group.addTask {
                    for await _ in hangups {
                        notifier.reloading()
                        let problems = await broker.reloadManifests()
                        logger.info("reloaded app manifests", metadata: ["problems": "\(problems.count)"])
                        notifier.ready(status: await broker.statusLine)
                    }
                }
                group.addTask {
                    // A graceful stop: finish what is in flight while refusing new work,
                    // then the group (and the control server) ends and the scenes are saved.
                    try await gracefulShutdown()
                    notifier.stopping()
                    await broker.drain()
                }
                try await group.next()
                group.cancelAll()
            }
        } catch is CancellationError {
            // The group was cancelled from outside: save and stop all the same.
        }
        notifier.stopping()
        logger.info("shutting down: saving every connected scene")
        let report = await broker.shutdown()
        guard report.unsaved.isEmpty else {
            for scene in report.unsaved {
                logger.error("scene state not saved at shutdown; its last committed state is kept", metadata: [
                    "SESSION_ID": "\(scene.session)", "title": "\(scene.title)", "reason": "\(scene.reason)",
                ])
            }
            let line = "Stopped: \(report.unsaved.count) scene\(report.unsaved.count == 1 ? "" : "s") could not save \(report.unsaved.count == 1 ? "its" : "their") state (the last committed state is kept)"
            notifier.status(line)
            logger.error("stopped; not everything was saved", metadata: ["unsaved": "\(report.unsaved.count)"])
            throw ShutdownIncomplete(unsaved: report.unsaved.count)
        }
        logger.info("stopped")
    }
}

/// A graceful stop during which some scenes could not save their state: windowbrokerd exits
/// with `exitCode` instead of 0 so a service manager and a script see it.
public struct ShutdownIncomplete: Error, CustomStringConvertible {
    public static let exitCode: Int32 = 3
    public var unsaved: Int
    public var description: String {
        "\(unsaved) scene\(unsaved == 1 ? "" : "s") could not save \(unsaved == 1 ? "its" : "their") state during shutdown; the last committed state is kept"
    }
}
