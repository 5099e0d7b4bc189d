/// spawn-probe: the smallest Foundation executable, built with the same flags as the workers.
/// `make bench` spawns it the way the broker spawns a worker and times its first byte on fd 3:
/// the floor a cold scene launch is compared with. Idle (`--idle`), the floor of an idle
/// scene's private memory.
import Foundation

// `--idle`: says "ready" on stdout and then does nothing, as an idle scene does; the floor
// `make bench` compares an idle worker's private memory with.
if CommandLine.arguments.dropFirst().first == "--idle" {
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while true { sleep(3600) }
}
FileHandle(fileDescriptor: 3, closeOnDealloc: false).write(Data([1]))
exit(0)
