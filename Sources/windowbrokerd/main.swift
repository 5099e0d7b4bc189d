import Foundation
import IPCWire

// Before any task starts: every task of the daemon then runs on NIO's event loop. One loop, not
// one per core: the broker's state is one actor, so a second loop only moved that actor and the
// sockets' reads between two threads (and their caches); its CPU is the scenes'. Measured with
// 100 scenes, an update and its acknowledgements back to back: the broker's CPU per receiver
// 17-22 against 20-26 us, p50 2.2-2.9 against 2.6-3.4 ms; the load test's throughput the same.
WireRuntime.runTasksOnEventLoops(loops: 1)
// Watchers, control clients and scenes each hold descriptors: the soft limit (often 1024) is
// raised to the hard one, so hundreds of watchers do not run the broker out of them.
var descriptors = rlimit()
if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors) == 0, descriptors.rlim_cur < descriptors.rlim_max {
    descriptors.rlim_cur = min(descriptors.rlim_max, 1 << 20)
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors)
}
do {
    let arguments = try ConfigFile.merged(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
    let daemon = try WindowBrokerDaemon.parse(arguments)
    try await daemon.run()
} catch {
    WindowBrokerDaemon.exit(withError: error)
}
