import IPCWire

// Parsed before any task starts, on this thread alone: what only prints (`--help`,
// `--version`, a usage error, a shell's completion request) exits here and starts no thread.
// (A completion request blocks for the broker's answer, which then comes from Dispatch's pool.)
// Handed to the one task that runs it, once, before that task exists.
nonisolated(unsafe) let command = WMCtlMain.parse()
// The main thread becomes the event loop that runs the socket and every task: a round trip to
// the broker wakes no other thread of this process, and none is started.
WireRuntime.runOnThisThread { await WMCtlMain.run(command) }
