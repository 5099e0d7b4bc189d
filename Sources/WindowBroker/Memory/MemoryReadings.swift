import Foundation
import IPCWire
import SystemPackage

/// One reading of `/proc/pressure/memory` (kernel PSI), in the kernel's own format:
/// ```
/// some avg10=0.00 avg60=0.00 avg300=0.00 total=0
/// full avg10=0.00 avg60=0.00 avg300=0.00 total=0
/// ```
/// `avg*` are percentages of wall time stalled; `total` is stall time in microseconds.
public struct PSIReading: Sendable, Equatable {
    public struct Line: Sendable, Equatable {
        public var avg10: Double
        public var avg60: Double
        public var avg300: Double
        public var total: UInt64
    }

    public var some: Line
    /// Absent on kernels that report only `some` for a resource.
    public var full: Line?

    public static func parse(_ text: [UInt8]) -> PSIReading? {
        var some: Line?
        var full: Line?
        for line in ProcText.lines(text) {
            let words = ProcText.words(line)
            guard let kind = words.first else { continue }
            var avg10: Double?, avg60: Double?, avg300: Double?, total: UInt64?
            for word in words.dropFirst() {
                guard let equals = word.firstIndex(of: UInt8(ascii: "=")) else { continue }
                let (key, value) = (word[..<equals], word[(equals + 1)...])
                if key.elementsEqual("avg10".utf8) { avg10 = ProcText.decimal(value) }
                else if key.elementsEqual("avg60".utf8) { avg60 = ProcText.decimal(value) }
                else if key.elementsEqual("avg300".utf8) { avg300 = ProcText.decimal(value) }
                else if key.elementsEqual("total".utf8) { total = ProcText.number(value) }
            }
            guard let avg10, let avg60, let avg300, let total else { continue }
            let parsed = Line(avg10: avg10, avg60: avg60, avg300: avg300, total: total)
            if kind.elementsEqual("some".utf8) { some = parsed } else if kind.elementsEqual("full".utf8) { full = parsed }
        }
        guard let some else { return nil }
        return PSIReading(some: some, full: full)
    }
}

/// The fields of `/proc/meminfo` the broker uses, in bytes.
public struct MemInfo: Sendable, Equatable {
    public var total: UInt64
    public var available: UInt64

    /// Reads the two lines it needs (the first and third of the kernel's file) and stops: it
    /// runs at every reading.
    public static func parse(_ text: [UInt8]) -> MemInfo? {
        var total: UInt64?, available: UInt64?
        for line in ProcText.lines(text) {
            if let bytes = ProcText.value(of: "MemTotal:", in: line) {
                total = bytes
            } else if let bytes = ProcText.value(of: "MemAvailable:", in: line) {
                available = bytes
            }
            if let total, let available { return MemInfo(total: total, available: available) }
        }
        return nil
    }
}

/// Proportional set size from `/proc/PID/smaps_rollup`: shared pages split among their users,
/// so the sum over workers is what they really cost.
public enum ProcessMemory {
    public static func parsePSS(_ text: [UInt8]) -> UInt64? {
        for line in ProcText.lines(text) {
            if let bytes = ProcText.value(of: "Pss:", in: line) { return bytes }
        }
        return nil
    }

    /// nil when the process is gone or cannot be read.
    public static func pss(of pid: pid_t) -> UInt64? {
        ProcFile.read("/proc/\(pid)/smaps_rollup").flatMap(parsePSS)
    }
}

/// What a process did, from `/proc/PID/stat`, summed over its threads: page faults, CPU time
/// and resident pages. Resident memory grows only by faulting pages in, and shrinks (the
/// process gives memory back, or the kernel reclaims its pages) with the resident count: a
/// process whose activity is unchanged holds the memory it held.
public struct ProcessActivity: Sendable, Equatable {
    public var minorFaults: UInt64
    public var majorFaults: UInt64
    /// User plus system time, in clock ticks.
    public var cpuTicks: UInt64
    public var residentPages: UInt64

    /// Parses the line after the command name, whose parentheses may hold spaces and
    /// parentheses themselves: the fields are counted from the last `)`. Bytes, not a
    /// `String`: it runs for every worker at every sample.
    public static func parse(_ line: [UInt8]) -> ProcessActivity? {
        guard let close = line.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // Field 3 (state) is the first after the name: minflt is field 10, majflt 12,
        // utime 14, stime 15, rss 24.
        let fields = ProcText.words(line[(close + 1)...], first: 22)
        guard fields.count > 21, let minor = ProcText.number(fields[7]), let major = ProcText.number(fields[9]),
              let user = ProcText.number(fields[11]), let system = ProcText.number(fields[12]),
              let resident = ProcText.number(fields[21]) else { return nil }
        return ProcessActivity(minorFaults: minor, majorFaults: major, cpuTicks: user &+ system, residentPages: resident)
    }

    /// nil when the process is gone or cannot be read.
    public static func of(_ pid: pid_t) -> ProcessActivity? {
        ProcFile.read("/proc/\(pid)/stat").flatMap(parse)
    }
}

/// The text of `/proc` files (ASCII) taken as bytes. Taken as a `String`, each split walked
/// the text `Character` by `Character` (grapheme breaking): parsing `/proc/meminfo` cost
/// 667,000 instructions and a worker's `smaps_rollup` 305,000 (`callgrind`), at every reading.
enum ProcText {
    /// The lines of `text`, without their newlines, in order, each found when it is asked
    /// for: a reader that stops at the line it needs scans no further.
    static func lines(_ text: [UInt8]) -> Lines {
        Lines(text: text, position: text.startIndex)
    }

    struct Lines: Sequence, IteratorProtocol {
        let text: [UInt8]
        var position: Int

        mutating func next() -> ArraySlice<UInt8>? {
            guard position < text.endIndex else { return nil }
            let end = text[position...].firstIndex(of: UInt8(ascii: "\n")) ?? text.endIndex
            defer { position = end + 1 }
            return text[position..<end]
        }
    }

    /// The words of `text` (between spaces and newlines), the first `count` of them: a reader
    /// that needs the first few scans no further.
    static func words(_ text: ArraySlice<UInt8>, first count: Int = .max) -> [ArraySlice<UInt8>] {
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") }
        var words: [ArraySlice<UInt8>] = []
        var index = text.startIndex
        while words.count < count, index < text.endIndex {
            while index < text.endIndex, isSpace(text[index]) { index += 1 }
            let start = index
            while index < text.endIndex, !isSpace(text[index]) { index += 1 }
            if start < index { words.append(text[start..<index]) }
        }
        return words
    }

    /// The value of a `Key:   123 kB` line (the format of `meminfo` and `smaps_rollup`) in bytes,
    /// when the line has that key; a value without a unit is taken as it is.
    static func value(of key: StaticString, in line: ArraySlice<UInt8>) -> UInt64? {
        let keyBytes = UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
        guard line.starts(with: keyBytes) else { return nil }
        let words = words(line.dropFirst(keyBytes.count), first: 2)
        guard let digits = words.first, let value = number(digits) else { return nil }
        guard words.count == 2, words[1].elementsEqual("kB".utf8) else { return value }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: 1024)
        return overflow ? nil : bytes
    }

    /// A decimal number of digits only; nil for anything else, or one too large.
    static func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// A number with a fraction (PSI's percentages), read by the standard library's parser.
    static func decimal(_ text: ArraySlice<UInt8>) -> Double? {
        Double(String(decoding: text, as: UTF8.self))
    }
}

/// A small file of `/proc`, read through swift-system into a buffer (Foundation's readers
/// cost several times the kernel's own work for a file read every second per worker).
enum ProcFile {
    static func read(_ path: String, upTo limit: Int = 4096) -> [UInt8]? {
        guard let fd = try? FileDescriptor.open(FilePath(path), .readOnly, options: .closeOnExec) else { return nil }
        let bytes = try? fd.closeAfter {
            try [UInt8](unsafeUninitializedCapacity: limit) { buffer, count in
                // /proc hands its files out in pieces: read until the end.
                while count < limit {
                    let got = try fd.read(into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[count...])))
                    guard got > 0 else { break }
                    count += got
                }
            }
        }
        return bytes?.isEmpty == false ? bytes : nil
    }
}

/// Which workers a reading reads.
enum SampleScope: Sendable, Equatable {
    /// Every worker afresh: under pressure, when the figures decide what is reclaimed.
    case everything
    /// The workers whose activity changed, or whose reading is older than the sampler's
    /// `maxAge` (the interval's reading, a PSI trigger's, the one after a reclaim).
    case changed
    /// Only workers with no reading yet (a launch added one, a pool was refilled): the
    /// others' readings stand until the next `changed` one. Checking every worker's activity
    /// costs a `/proc/PID/stat` read each, and a prewarmed open asked for two such readings
    /// (after its pool's refill, after the launch): the cost of an open grew with the number
    /// of scenes open.
    case newcomers
}

/// Each worker's PSS, read again only when it may have changed. `smaps_rollup` costs the
/// kernel a walk of the worker's page tables (about 100 µs for a notes worker): read every
/// second for 100 idle scenes, it was nearly all of an idle broker's CPU. A worker whose
/// activity (`ProcessActivity`) is unchanged keeps its last reading, for at most `maxAge`:
/// its PSS still moves when processes sharing its pages come and go. Under pressure every
/// reading is fresh (`SampleScope.everything`).
struct PSSSampler: Sendable {
    private struct Reading: Sendable {
        var pid: pid_t
        var activity: ProcessActivity
        var pss: UInt64
        var at: ContinuousClock.Instant
    }

    let maxAge: Duration
    private var last: [SessionID: Reading] = [:]

    init(maxAge: Duration) {
        self.maxAge = maxAge
    }

    /// The PSS of each worker in `pids` that could be read; workers no longer listed are
    /// forgotten.
    mutating func sample(
        _ pids: [SessionID: pid_t], now: ContinuousClock.Instant, scope: SampleScope,
        activity: (pid_t) -> ProcessActivity? = ProcessActivity.of, pss: (pid_t) -> UInt64? = ProcessMemory.pss
    ) -> [SessionID: UInt64] {
        var next: [SessionID: Reading] = [:]
        for (session, pid) in pids {
            if scope == .newcomers, let previous = last[session], previous.pid == pid {
                next[session] = previous
                continue
            }
            guard let current = activity(pid) else { continue }
            if scope == .changed, let previous = last[session], previous.pid == pid,
               previous.activity == current, now - previous.at < maxAge {
                next[session] = previous
            } else if let bytes = pss(pid) {
                next[session] = Reading(pid: pid, activity: current, pss: bytes, at: now)
            }
        }
        last = next
        return next.mapValues(\.pss)
    }
}

extension UInt64 {
    /// "123.4 MiB"
    var mebibytes: String { String(format: "%.1f MiB", Double(self) / 1_048_576) }
}
