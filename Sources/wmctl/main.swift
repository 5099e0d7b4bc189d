import IPCWire

// Before any task starts: one event loop runs the socket and every task, so a round trip to
// the broker wakes no other thread of this process.
WireRuntime.runTasksOnEventLoops(loops: 1)
await WMCtlMain.main()
