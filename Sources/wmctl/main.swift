import IPCWire

// Parsed before any task starts, on this thread alone: what only prints (`--help`,
// `--version`, a usage error, a shell's completion request) exits here and starts no thread.
// (A completion request blocks for the broker's answer, which then comes from Dispatch's pool.)
let command = WMCtlMain.parse()
// One event loop runs the socket and every task, so a round trip to the broker wakes no other
// thread of this process.
WireRuntime.runTasksOnEventLoops(loops: 1)
await WMCtlMain.run(command)
