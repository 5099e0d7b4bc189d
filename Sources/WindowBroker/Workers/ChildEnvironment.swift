/// The environment a child of the broker starts with: what every child inherits, encoded once
/// when the broker starts, and the few variables of this child's own (its descriptor, app,
/// session). Building it for each child from a dictionary (copying it, then formatting,
/// sorting and joining some 50 assignments) cost 250,000 instructions a worker, on the open's
/// path for a cold one (`callgrind`).
struct ChildEnvironment: Sendable {
    /// The inherited assignments ("KEY=VALUE"), sorted: children see them in a stable order.
    private let inherited: [String]
    private let inheritedKeys: Set<String>
    /// The same, each NUL-terminated, as a zygote's fork request carries them.
    private let inheritedBlock: [UInt8]
    /// This child's own variables in the order they were set (nil: unset). They replace
    /// inherited ones of the same name.
    private var own: [(key: String, value: String?)] = []

    init(inheriting environment: [String: String]) {
        inherited = environment.map { "\($0.key)=\($0.value)" }.sorted()
        inheritedKeys = Set(environment.keys)
        inheritedBlock = Self.block(inherited)
    }

    /// With `key` set to `value`, or unset when `value` is nil.
    func setting(_ key: String, _ value: String?) -> ChildEnvironment {
        var copy = self
        copy.own.removeAll { $0.key == key }
        if value != nil || inheritedKeys.contains(key) { copy.own.append((key, value)) }
        return copy
    }

    /// "KEY=VALUE" strings, as `execve` takes them.
    var assignments: [String] {
        keptInherited + own.compactMap { entry in entry.value.map { "\(entry.key)=\($0)" } }
    }

    /// The assignments, each NUL-terminated, in one buffer: a zygote's fork request.
    var block: [UInt8] {
        var bytes = own.contains { inheritedKeys.contains($0.key) } ? Self.block(keptInherited) : inheritedBlock
        for case let (key, value?) in own {
            bytes.append(contentsOf: key.utf8)
            bytes.append(UInt8(ascii: "="))
            bytes.append(contentsOf: value.utf8)
            bytes.append(0)
        }
        return bytes
    }

    /// The inherited assignments that no variable of the child's own replaces.
    private var keptInherited: [String] {
        let replaced = Set(own.map(\.key)).intersection(inheritedKeys)
        guard !replaced.isEmpty else { return inherited }
        return inherited.filter { !replaced.contains(String($0.prefix { $0 != "=" })) }
    }

    private static func block(_ assignments: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        for assignment in assignments {
            bytes.append(contentsOf: assignment.utf8)
            bytes.append(0)
        }
        return bytes
    }
}
