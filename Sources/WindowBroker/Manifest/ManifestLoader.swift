import Foundation
import IPCWire

/// A manifest that could not be used: which file, which field, and why. The broker logs it and
/// skips the app; it still starts.
public struct ManifestProblem: Error, Sendable, CustomStringConvertible, Equatable {
    public var file: String
    public var field: String
    public var reason: String
    /// A warning (an unknown key, most likely a typo) leaves the app loaded.
    public var isWarning = false
    public var description: String { "\(file): field '\(field)': \(reason)" }
}

/// Reads app manifests (`*.json`) from the apps directories.
public struct ManifestLoader: Sendable {
    public var directories: [String]
    /// Where bare executable names are looked for first (the broker's own directory).
    public var helperDirectory: String?
    public var searchPath: [String]

    public init(directories: [String], helperDirectory: String?, searchPath: [String]) {
        self.directories = directories
        self.helperDirectory = helperDirectory
        self.searchPath = searchPath
    }

    /// `$XDG_DATA_HOME/windowbroker/apps` then each `$XDG_DATA_DIRS/windowbroker/apps`.
    public static func defaultDirectories(environment: [String: String]) -> [String] {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init)
        return ([dataHome] + dataDirs).map { $0 + "/windowbroker/apps" }
    }

    /// Largest manifest file read; anything bigger is refused unread.
    public static let maxManifestBytes = 64 << 10

    /// Loads every manifest, directories in order and files by name. The same id in two
    /// directories: the earlier directory wins (the user's own overrides the system's, as with
    /// XDG data files) and both files are named in a warning. The same id twice in one
    /// directory: neither file loads, and both are named.
    public func load() -> (apps: [AppID: AppManifest], problems: [ManifestProblem]) {
        var apps: [AppID: AppManifest] = [:]
        var problems: [ManifestProblem] = []
        let fm = FileManager.default
        for directory in directories {
            guard let names = try? fm.contentsOfDirectory(atPath: directory) else { continue }
            var inThisDirectory: [AppID: [AppManifest]] = [:]
            for name in names.sorted() where name.hasSuffix(".json") {
                let file = directory + "/" + name
                // Read once, bounded: the size of what a link points at counts, not the link's.
                let data: Data
                do {
                    data = try BoundedFile.read(file, limit: Self.maxManifestBytes, what: "the manifest")
                } catch {
                    problems.append(ManifestProblem(file: file, field: "-", reason: error.code == .payloadTooLarge
                        ? "is larger than a manifest may be (at most \(Self.maxManifestBytes) bytes)" : "cannot be read (\(error.message))"))
                    continue
                }
                problems += unknownKeys(file: file, data: data)
                do {
                    let manifest = try parse(file: file, data: data)
                    inThisDirectory[manifest.id, default: []].append(manifest)
                } catch let problem as ManifestProblem {
                    problems.append(problem)
                } catch {
                    problems.append(ManifestProblem(file: file, field: "-", reason: "\(error)"))
                }
            }
            for (id, manifests) in inThisDirectory.sorted(by: { $0.key < $1.key }) {
                if manifests.count > 1 {
                    let files = manifests.map(\.source)
                    for manifest in manifests {
                        problems.append(ManifestProblem(
                            file: manifest.source, field: "id",
                            reason: "'\(id)' is declared by \(files.joined(separator: " and ")) in one directory; neither is loaded until one is renamed or removed"))
                    }
                } else if let existing = apps[id] {
                    problems.append(ManifestProblem(
                        file: manifests[0].source, field: "id",
                        reason: "'\(id)' is also declared by \(existing.source), an earlier directory, which wins; this file is ignored",
                        isWarning: true))
                } else {
                    apps[id] = manifests[0]
                }
            }
        }
        return (apps, problems)
    }

    private struct RawManifest: Decodable {
        var id: String?
        var name: String?
        var executable: String?
        var arguments: [String]?
        var supportsMultipleScenes: Bool?
        var configurations: [AppManifest.Configuration]?
        var activityTypes: [String]?
        var prewarm: Int?
        var zygote: Bool?
        var actions: [AppManifest.Action]?
    }

    /// `menus` and `commands` are read element by element: one bad command is reported and
    /// the rest of the menu still loads.
    private struct RawMenus: Decodable {
        var menus: [RawElement]?
        var commands: [RawElement]?
    }

    struct RawPlacement: Decodable {
        var menu: String
        var at: String?
        var position: String?
    }

    struct RawElement: Decodable {
        var id: String?
        var title: String?
        var discoverabilityTitle: String?
        var input: String?
        var modifiers: [String]?
        var attributes: [String]?
        var allowsAutomaticMirroring: Bool?
        var insertChild: RawPlacement?
        var insertSibling: RawPlacement?
    }

    /// More idle processes than this per app would only waste memory.
    public static let maxPrewarm = 8

    public func parse(file: String) throws -> AppManifest {
        let data: Data
        do {
            data = try BoundedFile.read(file, limit: Self.maxManifestBytes, what: "the manifest")
        } catch {
            throw ManifestProblem(file: file, field: "-", reason: "cannot be read (\(error.message))")
        }
        return try parse(file: file, data: data)
    }

    func parse(file: String, data: Data) throws -> AppManifest {
        let raw: RawManifest
        do {
            raw = try JSONDecoder().decode(RawManifest.self, from: data)
        } catch DecodingError.typeMismatch(let type, let context) {
            throw ManifestProblem(file: file, field: Self.path(context.codingPath), reason: "expected \(type)")
        } catch DecodingError.keyNotFound(let key, let context) {
            throw ManifestProblem(file: file, field: Self.path(context.codingPath + [key]), reason: "is required")
        } catch DecodingError.valueNotFound(let type, let context) {
            throw ManifestProblem(file: file, field: Self.path(context.codingPath), reason: "expected \(type), found null")
        } catch {
            throw ManifestProblem(file: file, field: "-", reason: "is not valid JSON" + (Self.syntaxError(in: data).map { ": \($0)" } ?? ""))
        }
        func require<T>(_ value: T?, _ field: String) throws -> T {
            guard let value else { throw ManifestProblem(file: file, field: field, reason: "is required") }
            return value
        }
        let id = try require(raw.id, "id")
        guard id.range(of: #"^[A-Za-z0-9][A-Za-z0-9._-]*$"#, options: .regularExpression) != nil else {
            throw ManifestProblem(file: file, field: "id", reason: "'\(id)' must be letters, digits, '.', '_' or '-'")
        }
        let executable = try resolve(executable: try require(raw.executable, "executable"), manifest: file)
        let configurations = raw.configurations ?? [
            .init(name: "Default", role: AppManifest.defaultRole, delegate: "SceneDelegate", canActivate: nil, prefersToActivate: nil)
        ]
        guard !configurations.isEmpty else {
            throw ManifestProblem(file: file, field: "configurations", reason: "must declare at least one configuration")
        }
        var seen = Set<String>()
        for (i, configuration) in configurations.enumerated() where !seen.insert(configuration.name).inserted {
            throw ManifestProblem(file: file, field: "configurations[\(i)].name", reason: "'\(configuration.name)' is declared twice")
        }
        let activityTypes = raw.activityTypes ?? []
        if let empty = activityTypes.firstIndex(where: \.isEmpty) {
            throw ManifestProblem(file: file, field: "activityTypes[\(empty)]", reason: "must not be empty")
        }
        let prewarm = raw.prewarm ?? 0
        guard (0...Self.maxPrewarm).contains(prewarm) else {
            throw ManifestProblem(file: file, field: "prewarm", reason: "\(prewarm) is out of range (0...\(Self.maxPrewarm))")
        }
        var manifest = AppManifest(
            id: AppID(id),
            name: raw.name ?? id,
            executable: executable,
            arguments: raw.arguments ?? [],
            supportsMultipleScenes: raw.supportsMultipleScenes ?? true,
            configurations: configurations,
            activityTypes: activityTypes,
            prewarm: prewarm,
            source: file
        )
        var actionNames = Set<String>()
        for (i, action) in (raw.actions ?? []).enumerated() {
            guard !action.name.isEmpty, !action.name.contains(where: \.isWhitespace) else {
                throw ManifestProblem(file: file, field: "actions[\(i)].name", reason: "'\(action.name)' must be a word with no spaces")
            }
            guard actionNames.insert(action.name).inserted else {
                throw ManifestProblem(file: file, field: "actions[\(i)].name", reason: "'\(action.name)' is declared twice")
            }
        }
        manifest.actions = raw.actions ?? []
        manifest.zygote = raw.zygote ?? false
        (manifest.mainMenu, manifest.commandErrors) = Self.mainMenu(file: file, data: data)
        return manifest
    }

    /// The manifest's menus (first) and commands (then), in declaration order, inserted into
    /// the system menu; each one refused is reported with file, element and reason.
    static func mainMenu(file: String, data: Data) -> (MainMenu, [String]) {
        let raw: RawMenus
        do {
            raw = try JSONDecoder().decode(RawMenus.self, from: data)
        } catch {
            return (.system, ["\(file): menus and commands: not in the expected shape (\(error))"])
        }
        var insertions: [MenuInsertion] = []
        var errors: [String] = []
        for (kind, elements) in [("menu", raw.menus ?? []), ("command", raw.commands ?? [])] {
            for (index, element) in elements.enumerated() {
                do {
                    insertions.append(try insertion(element, isMenu: kind == "menu"))
                } catch {
                    errors.append("\(file): \(kind) '\(element.id ?? "#\(index)")': \(error.message)")
                }
            }
        }
        let (menu, refused) = MainMenu.build(insertions)
        let kinds = Dictionary(insertions.map { ($0.element.id, $0.element.isMenu ? "menu" : "command") }, uniquingKeysWith: { a, _ in a })
        errors += refused.map { "\(file): \(kinds[$0.element] ?? "command") '\($0.element)': \($0.reason)" }
        return (menu, errors)
    }

    static func insertion(_ raw: RawElement, isMenu: Bool) throws(BrokerError) -> MenuInsertion {
        guard let id = raw.id, !id.isEmpty, id.utf8.count <= 128 else { throw BrokerError(.invalidRequest, "needs an id (1 to 128 bytes)") }
        guard let title = raw.title, !title.isEmpty else { throw BrokerError(.invalidRequest, "needs a title") }
        let placement: MenuPlacement
        switch (raw.insertChild, raw.insertSibling) {
        case (let child?, nil):
            guard ["start", "end", nil].contains(child.at) else { throw BrokerError(.invalidRequest, "insertChild.at is start or end, not '\(child.at!)'") }
            placement = .child(of: child.menu, atStart: child.at == "start")
        case (nil, let sibling?):
            guard ["before", "after", nil].contains(sibling.position) else { throw BrokerError(.invalidRequest, "insertSibling.position is before or after, not '\(sibling.position!)'") }
            placement = .sibling(of: sibling.menu, before: sibling.position == "before")
        case (nil, nil):
            placement = .child(of: "application", atStart: false)
        case (_?, _?):
            throw BrokerError(.invalidRequest, "give insertChild or insertSibling, not both")
        }
        if isMenu {
            return MenuInsertion(element: .menu(Menu(id: id, title: title)), placement: placement)
        }
        var shortcut: KeyShortcut?
        if let input = raw.input {
            var modifiers: Set<KeyShortcut.Modifier> = []
            for name in raw.modifiers ?? [] {
                guard let modifier = KeyShortcut.Modifier(rawValue: name.lowercased()) else {
                    throw BrokerError(.invalidRequest, "'\(name)' is not a modifier (ctrl, alt, shift, super)")
                }
                modifiers.insert(modifier)
            }
            shortcut = try KeyShortcut(modifiers: modifiers, key: input)
        } else if raw.modifiers?.isEmpty == false {
            throw BrokerError(.invalidRequest, "has modifiers but no input key")
        }
        var attributes: Set<MenuCommand.Attribute> = []
        for name in raw.attributes ?? [] {
            guard let attribute = MenuCommand.Attribute(rawValue: name) else {
                throw BrokerError(.invalidRequest, "'\(name)' is not an attribute (destructive, hidden, disabled)")
            }
            attributes.insert(attribute)
        }
        return MenuInsertion(element: .command(MenuCommand(
            id: id, title: title, discoverabilityTitle: raw.discoverabilityTitle, shortcut: shortcut,
            attributes: attributes, allowsAutomaticMirroring: raw.allowsAutomaticMirroring ?? true)), placement: placement)
    }

    private func resolve(executable: String, manifest: String) throws -> String {
        let fm = FileManager.default
        let candidates: [String]
        if executable.hasPrefix("/") {
            candidates = [executable]
        } else if executable.contains("/") {
            let base = (manifest as NSString).deletingLastPathComponent
            candidates = [((base as NSString).appendingPathComponent(executable) as NSString).standardizingPath]
        } else {
            // Each place once: the broker's directory is often on PATH too.
            var seen = Set<String>()
            candidates = ([helperDirectory].compactMap { $0 } + searchPath)
                .map { ($0 as NSString).standardizingPath }.filter { seen.insert($0).inserted }.map { $0 + "/" + executable }
        }
        // A regular executable file: a directory has the x bit too.
        func isRegularExecutable(_ path: String) -> Bool {
            var isDirectory: ObjCBool = false
            return fm.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue && fm.isExecutableFile(atPath: path)
        }
        guard let found = candidates.first(where: isRegularExecutable) else {
            throw ManifestProblem(
                file: manifest, field: "executable",
                reason: "'\(executable)' is not an executable file (looked at \(candidates.prefix(3).joined(separator: ", ")))")
        }
        return found
    }

    static let knownKeys: Set<String> = ["id", "name", "executable", "arguments", "supportsMultipleScenes", "configurations", "activityTypes", "prewarm", "zygote", "menus", "commands", "actions"]
    static let knownConfigurationKeys: Set<String> = ["name", "role", "delegate", "canActivate", "prefersToActivate"]

    /// Keys the broker does not know, as warnings: a misspelt `prefersToActivate` would
    /// otherwise be ignored without a word.
    private func unknownKeys(file: String, data: Data) -> [ManifestProblem] {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [] }
        var warnings = object.keys.filter { !Self.knownKeys.contains($0) }.sorted().map {
            ManifestProblem(file: file, field: $0, reason: "is not a manifest key; ignored" + NameSuggestion.didYouMean($0, among: Self.knownKeys), isWarning: true)
        }
        for (i, configuration) in ((object["configurations"] as? [Any]) ?? []).enumerated() {
            guard let configuration = configuration as? [String: Any] else { continue }
            warnings += configuration.keys.filter { !Self.knownConfigurationKeys.contains($0) }.sorted().map {
                ManifestProblem(file: file, field: "configurations[\(i)].\($0)",
                                reason: "is not a configuration key; ignored" + NameSuggestion.didYouMean($0, among: Self.knownConfigurationKeys), isWarning: true)
            }
        }
        return warnings
    }

    /// Where the JSON parser stopped, as a line and a column ("line 3, column 11: invalid value").
    static func syntaxError(in data: Data) -> String? {
        do {
            _ = try JSONSerialization.jsonObject(with: data)
            return nil
        } catch {
            let text = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? ""
            // Foundation says where as a byte offset ("... around character 25.").
            guard let range = text.range(of: #"around (line \d+, column \d+|character \d+)"#, options: .regularExpression) else {
                return text.isEmpty ? nil : text
            }
            let what = text[..<range.lowerBound].trimmingCharacters(in: .whitespaces).lowercased()
            let place = String(text[range].dropFirst("around ".count))
            guard place.hasPrefix("character"), let offset = Int(place.dropFirst("character ".count)) else {
                return "\(place): \(what)"
            }
            let before = data.prefix(max(0, min(offset, data.count)))
            let line = before.reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
            let column = before.count - (before.lastIndex(of: 0x0A).map { $0 - before.startIndex + 1 } ?? 0) + 1
            return "line \(line), column \(column): \(what)"
        }
    }

    private static func path(_ keys: [CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(in: CharacterSet(charactersIn: "."))
    }
}
