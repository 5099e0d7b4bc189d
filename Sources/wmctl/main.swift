import IPCWire

// Before any task starts: one event loop runs the socket and every task, so a round trip to
// the broker wakes no other thread of this process.
// (Not while a shell asks for completions: those block for their answer, which must then come
// from another thread.)
if !CommandLine.arguments.contains("---completion") {
    WireRuntime.runTasksOnEventLoops(loops: 1)
}
await WMCtlMain.main()
