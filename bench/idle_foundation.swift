// The idle-memory baseline of `make bench`: the smallest program that links all of Foundation
// (built with the static stdlib, as installed workers are) and then does nothing, as an idle
// scene does. Its private memory is the floor an idle worker is compared with.
import Foundation

FileHandle.standardOutput.write(Data("ready\n".utf8))
while true { sleep(3600) }
