import Foundation
import IPCWire
import Logging
import ServiceLifecycle
import UnixSignals

/// The broker's concerns as swift-service-lifecycle services, in the order a `ServiceGroup`
/// starts them. The group stops them in reverse, each once the one before it has ended: systemd
/// hears STOPPING=1 first, then SIGHUP, D-Bus and the memory monitor stop, the control server
/// refuses new work and finishes what is in flight, and last every scene is saved and stopped,
/// with the watchdog petted throughout.
public enum BrokerServices {
    /// `onReady` runs once the control socket accepts (the store was opened before).
    public static func make(broker: Broker, listener: ControlServer.Listener, notifier: SystemdNotifier = SystemdNotifier(),
                            logger: Logger) async -> [ServiceGroupConfiguration.ServiceConfiguration] {
        // Trapped before the server starts, so before READY=1: a SIGHUP sent as soon as the
        // broker says it is ready (a package's post-install step) reloads instead of ending it.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let control = ControlService(server: ControlServer(broker: broker, listener: listener, logger: logger)) {
            let status = await broker.statusLine
            logger.info("ready", metadata: ["status": "\(status)", "BROKER_PID": "\(getpid())"])
            notifier.ready(status: status)
            if broker.configuration.restoreWorkspace {
                Task { await broker.restoreWorkspace() }
            }
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let interval = SystemdNotifier.watchdogInterval() {
            services.append(.init(service: WatchdogService(broker: broker, notifier: notifier, interval: interval)))
        }
        services.append(.init(service: SceneShutdownService(broker: broker, notifier: notifier, logger: logger)))
        services.append(.init(service: MemoryMonitor(broker: broker, logger: logger)))
        services.append(.init(service: control))
        if broker.configuration.sessionBus {
            // Without a bus the broker serves on: the face ending is no reason to stop.
            services.append(.init(service: SessionBusService(face: SessionBusFace(broker: broker, logger: logger)),
                                  successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore))
        }
        services.append(.init(service: ManifestReloadService(broker: broker, hangups: hangups, notifier: notifier, logger: logger)))
        if notifier.isEnabled {
            services.append(.init(service: StatusService(broker: broker, notifier: notifier)))
        }
        return services
    }
}

/// Saves and stops every scene once the group stops (or is cancelled: a service failed), the
/// last service to end. Throws `ShutdownIncomplete` when a scene could not save its state.
struct SceneShutdownService: Service {
    let broker: Broker
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        // Cancelled rather than stopped (another service failed): save all the same. STOPPING=1
        // went out when the group began to stop (`StatusService`, the first told).
        try? await gracefulShutdown()
        logger.info("shutting down: saving every connected scene")
        let report = await broker.shutdown()
        guard report.unsaved.isEmpty else {
            for scene in report.unsaved {
                logger.error("scene state not saved at shutdown; its last committed state is kept", metadata: [
                    "SESSION_ID": "\(scene.session)", "title": "\(scene.title)", "reason": "\(scene.reason)",
                ])
            }
            let count = report.unsaved.count
            notifier.status("Stopped: \(count) scene\(count == 1 ? "" : "s") could not save \(count == 1 ? "its" : "their") state (the last committed state is kept)")
            logger.error("stopped; not everything was saved", metadata: ["unsaved": "\(count)"])
            throw ShutdownIncomplete(unsaved: count)
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

/// Reloads the app manifests on SIGHUP, telling systemd RELOADING=1 and READY=1 around it.
struct ManifestReloadService: Service {
    let broker: Broker
    let hangups: UnixSignalsSequence
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        for await _ in hangups.cancelOnGracefulShutdown() {
            notifier.reloading()
            let problems = await broker.reloadManifests()
            logger.info("reloaded app manifests", metadata: ["problems": "\(problems.count)"])
            notifier.ready(status: await broker.statusLine)
        }
    }
}
