import ArgumentParser

/// A duration flag in systemd's time-span notation: `5`, `5s`, `300ms`, `2min`, `1.5s`, `1h`.
/// Non-finite and negative values are usage errors, not crashes.
struct TimeSpan: ExpressibleByArgument, CustomStringConvertible, Sendable {
    var seconds: Double

    init(seconds: Double) {
        self.seconds = seconds
    }

    init?(argument: String) {
        let units: [(String, Double)] = [("ms", 0.001), ("us", 0.000_001), ("min", 60), ("s", 1), ("m", 60), ("h", 3600)]
        var text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        var scale = 1.0
        if let (suffix, factor) = units.first(where: { text.hasSuffix($0.0) }) {
            scale = factor
            text.removeLast(suffix.count)
        }
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0,
              (value * scale) < 365 * 86_400 else { return nil }
        seconds = value * scale
    }

    var duration: Duration { .milliseconds(Int64((seconds * 1000).rounded())) }
    var description: String { seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s" }
    static var defaultCompletionKind: CompletionKind { .default }
}
