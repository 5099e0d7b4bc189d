#if canImport(Glibc)
import Glibc
#endif

/// What a process reads about itself as it starts (an environment variable, its own name),
/// without Foundation's `ProcessInfo`: its first use builds the whole environment as a
/// dictionary and resolves its own types by name, about 5% of a worker's start in `perf`.
package enum ProcessFacts {
    /// The value of the environment variable `name`; nil when it is not set.
    package static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Whether this process was given a Wayland display (`WAYLAND_DISPLAY` set and not empty):
    /// a scene opens its window there, the system UI its surfaces.
    package static var hasDisplay: Bool {
        guard let display = getenv("WAYLAND_DISPLAY") else { return false }
        return display.pointee != 0
    }

    /// The executable's file name, as `ps` shows it.
    package static var name: String {
        guard let path = CommandLine.arguments.first, !path.isEmpty else { return "" }
        return path.split(separator: "/").last.map(String.init) ?? path
    }
}
