/// "Did you mean …?" for a name a person typed into a file the broker reads (manifests, the
/// daemon's configuration): the known name fewest edits away, when it is close enough.
package enum NameSuggestion {
    /// " (did you mean 'supportsMultipleScenes'?)", or "" when no known name is a few edits away.
    package static func didYouMean(_ name: String, among known: some Collection<String>) -> String {
        let typed = Array(name.lowercased())
        let closest = known.map { ($0, editDistance(typed, Array($0.lowercased()))) }.min { ($0.1, $0.0) < ($1.1, $1.0) }
        guard let (match, distance) = closest, distance <= max(2, typed.count / 4) else { return "" }
        return " (did you mean '\(match)'?)"
    }

    /// Levenshtein distance: the insertions, deletions and substitutions from `a` to `b`.
    package static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
