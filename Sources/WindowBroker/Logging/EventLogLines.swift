import Logging
import NIOPosix
import Synchronization

/// The log lines of the broker's events (`Broker.emit`), written once the step that emitted
/// them lets go of its thread instead of in the middle of it.
///
/// Why: at the default level an open logs `created` and `launched` before its scene's connect
/// command is written, and formatting and writing a line (its time, its metadata, a `write`
/// to stderr or a datagram to the journal) cost about 0.1 ms each there (`perf`, prewarmed
/// opens at `--log-level info`). Queued on the event loop the step runs on, the lines are
/// written right after the step suspends (for an open, while its scene runs its callbacks),
/// in the order they were emitted: the queue is drained whole under its lock, so two loops
/// flushing at once cannot interleave it.
final class EventLogLines: Sendable {
    private struct Line {
        var level: Logger.Level
        var message: Logger.Message
        var metadata: Logger.Metadata
    }

    private let logger: Logger
    private let pending = Mutex<[Line]>([])

    init(logger: Logger) {
        self.logger = logger
    }

    /// Queues a line when its level is logged at all; the first line queued asks the current
    /// event loop to write the queue once the running step is done (off a loop: at once).
    func log(_ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, metadata: @autoclosure () -> Logger.Metadata) {
        guard logger.logLevel <= level else { return }
        let line = Line(level: level, message: message(), metadata: metadata())
        let first = pending.withLock { lines in
            lines.append(line)
            return lines.count == 1
        }
        guard first else { return }
        if let loop = MultiThreadedEventLoopGroup.currentEventLoop {
            loop.execute { self.flush() }
        } else {
            flush()
        }
    }

    /// Writes what is queued, in order. Also called as the broker stops, so that no event's
    /// line is left behind.
    func flush() {
        pending.withLock { lines in
            for line in lines { logger.log(level: line.level, line.message, metadata: line.metadata) }
            lines.removeAll(keepingCapacity: true)
        }
    }
}
