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

/// A percentage flag (`--psi-warning 7`): a finite number from 0 to 100. "inf", "nan" and
/// "1e20" are usage errors, not values that crash arithmetic later.
struct Percentage: ExpressibleByArgument, CustomStringConvertible, Sendable {
    var value: Double

    init(_ value: Double) {
        self.value = value
    }

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "%", with: "")
        guard let value = Double(text), value.isFinite, (0...100).contains(value) else { return nil }
        self.value = value
    }

    var description: String { value == value.rounded() ? "\(Int(value))" : "\(value)" }
    static var defaultCompletionKind: CompletionKind { .default }
}
