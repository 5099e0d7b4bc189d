import Foundation
import IPCWire

// Before any task starts: every task of the daemon then runs on NIO's event loops.
WireRuntime.runTasksOnEventLoops()
// Every request and every scene's answer is read on those loops: one a peer wakes runs at once.
WireRuntime.makeLoopsInteractive()
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
} catch let error as ConfigFileError {
    // The file's mistake alone: the usage text is about flags, which the person did not type.
    FileHandle.standardError.write(Data("windowbrokerd: \(error)\n".utf8))
    exit(78)  // EX_CONFIG, which systemd shows as "CONFIG"
} catch {
    WindowBrokerDaemon.exit(withError: error)
}
