import NIOCore
import NIOPosix

/// Blocking work (reading `/proc`, `posix_spawn`, reading manifests) runs on NIO's thread pool,
/// never on an event loop: the event loops are the broker's executor and serve every control
/// and worker connection, so a slow `/proc` read must not delay a frame.
enum OffLoop {
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }
}
