/// spawn-probe: the smallest Foundation executable, built with the same flags as the workers.
/// `make bench` spawns it the way the broker spawns a worker and times its first byte on fd 3:
/// the floor a cold scene launch is compared with.
import Foundation

FileHandle(fileDescriptor: 3, closeOnDealloc: false).write(Data([1]))
exit(0)
