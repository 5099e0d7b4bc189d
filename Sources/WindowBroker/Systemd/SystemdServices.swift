import IPCWire
import ServiceLifecycle

/// Keeps systemd's STATUS= line current, a tenth of a second behind the broker's events (the
/// line is made once for an open's ten events), and says STOPPING=1 when the group stops.
struct StatusService: Service {
    let broker: Broker
    let notifier: SystemdNotifier

    func run() async throws {
        let changes = EventBatches<Void>(window: .milliseconds(100), on: broker.requestLoop)
        _ = await broker.subscribe(batching: changes) { _ in () }
        var last = await broker.statusLine
        for await _ in changes.cancelOnGracefulShutdown() {
            let line = await broker.statusLine
            if line != last {
                last = line
                notifier.status(line)
            }
        }
        notifier.stopping()
    }
}

/// Pets systemd's watchdog through the broker's executor, so that a wedged broker stops
/// petting; until the last scene is saved at a stop.
struct WatchdogService: Service {
    let broker: Broker
    let notifier: SystemdNotifier
    let interval: Duration

    func run() async throws {
        let (broker, notifier, interval) = (broker, notifier, interval)
        await cancelWhenGracefulShutdown {
            while (try? await WireRuntime.sleep(for: interval)) != nil {
                await broker.heartbeat()
                notifier.watchdog()
            }
        }
    }
}
