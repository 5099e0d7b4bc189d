import Foundation

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

    public static func parse(_ text: String) -> PSIReading? {
        var some: Line?
        var full: Line?
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard let kind = words.first else { continue }
            var values: [String: Substring] = [:]
            for word in words.dropFirst() {
                let pair = word.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { values[String(pair[0])] = pair[1] }
            }
            guard let avg10 = values["avg10"].flatMap({ Double($0) }),
                  let avg60 = values["avg60"].flatMap({ Double($0) }),
                  let avg300 = values["avg300"].flatMap({ Double($0) }),
                  let total = values["total"].flatMap({ UInt64($0) }) else { continue }
            let parsed = Line(avg10: avg10, avg60: avg60, avg300: avg300, total: total)
            if kind == "some" { some = parsed } else if kind == "full" { full = parsed }
        }
        guard let some else { return nil }
        return PSIReading(some: some, full: full)
    }
}

/// The fields of `/proc/meminfo` the broker uses, in bytes.
public struct MemInfo: Sendable, Equatable {
    public var total: UInt64
    public var available: UInt64

    public static func parse(_ text: String) -> MemInfo? {
        var fields: [Substring: UInt64] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == ":" || $0 == " " })
            guard parts.count >= 2, let value = UInt64(parts[1]) else { continue }
            fields[parts[0]] = value * (parts.count >= 3 && parts[2] == "kB" ? 1024 : 1)
        }
        guard let total = fields["MemTotal"], let available = fields["MemAvailable"] else { return nil }
        return MemInfo(total: total, available: available)
    }
}

/// Proportional set size from `/proc/PID/smaps_rollup`: shared pages split among their users,
/// so the sum over workers is what they really cost.
public enum ProcessMemory {
    public static func parsePSS(_ text: String) -> UInt64? {
        for line in text.split(separator: "\n") where line.hasPrefix("Pss:") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2, let kB = UInt64(parts[1]) else { return nil }
            return kB * 1024
        }
        return nil
    }

    /// nil when the process is gone or cannot be read.
    public static func pss(of pid: pid_t) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return nil }
        return parsePSS(text)
    }
}

extension UInt64 {
    /// "123.4 MiB"
    var mebibytes: String { String(format: "%.1f MiB", Double(self) / 1_048_576) }
}
