import IPCWire

// Before any task starts: every task of the daemon then runs on NIO's event loops.
WireRuntime.runTasksOnEventLoops()
do {
    let daemon = try WindowBrokerDaemon.parse()
    try await daemon.run()
} catch {
    WindowBrokerDaemon.exit(withError: error)
}
