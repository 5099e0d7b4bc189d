import Foundation
import IPCWire

// Before any task starts: every task of the daemon then runs on NIO's event loops.
WireRuntime.runTasksOnEventLoops()
do {
    let arguments = try ConfigFile.merged(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
    let daemon = try WindowBrokerDaemon.parse(arguments)
    try await daemon.run()
} catch {
    WindowBrokerDaemon.exit(withError: error)
}
