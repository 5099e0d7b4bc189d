import ArgumentParser
import Foundation
import WindowBroker

/// `windowbrokerd.conf`: every command-line flag as a key, one per line, `#` comments.
///
///     max-workers = 32
///     apps-dir = /opt/apps        # repeatable, like the flag
///     rebuild-index = true        # a flag without a value: true or false
///
/// Read from `--config PATH`, else `$XDG_CONFIG_HOME/windowbroker/windowbrokerd.conf` when
/// it exists. A key given on the command line wins over the file.
enum ConfigFile {
    static func defaultPath(environment: [String: String]) -> String {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
        return configHome + "/windowbroker/windowbrokerd.conf"
    }

    /// The command line with the file's settings in front of it (those the command line does not set).
    static func merged(_ commandLine: [String], environment: [String: String]) throws -> [String] {
        var explicitPath: String?
        if let index = commandLine.firstIndex(of: "--config"), index + 1 < commandLine.count {
            explicitPath = commandLine[index + 1]
        } else if let inline = commandLine.first(where: { $0.hasPrefix("--config=") }) {
            explicitPath = String(inline.dropFirst("--config=".count))
        }
        if commandLine.contains("--help") || commandLine.contains("-h") || commandLine.contains("--version") { return commandLine }
        let path = explicitPath ?? defaultPath(environment: environment)
        let text: String
        do {
            text = String(decoding: try BoundedFile.read(path, limit: 1 << 20, what: "the configuration file"), as: UTF8.self)
        } catch {
            // A default file that is not there is no file; one that is there must be readable.
            if explicitPath != nil || FileManager.default.fileExists(atPath: path) { throw ConfigFileError(path: path, line: nil, problem: error.message) }
            return commandLine
        }
        let given = Set(commandLine.filter { $0.hasPrefix("--") }.map { String($0.split(separator: "=", maxSplits: 1)[0].dropFirst(2)) })
        let settings = Self.settings
        var arguments: [String] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            func mistake(_ problem: String) -> ConfigFileError { ConfigFileError(path: path, line: number + 1, problem: problem) }
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw mistake("expected `key = value`, found '\(line)'")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard let known = settings[key] else {
                throw mistake("'\(key)' is not a setting\(NameSuggestion.didYouMean(key, among: settings.keys)); the settings are the flags' names without --, as windowbrokerd --help lists them")
            }
            let setting: [String]
            if known.takesValue {
                setting = ["--\(key)", value]
            } else {
                switch value.lowercased() {
                case "true", "yes": setting = ["--\(key)"]
                case "false", "no": setting = []
                default: throw mistake("\(key) = \(value): '\(key)' is a switch: true or false")
                }
            }
            // Each line alone must make sense, so that its mistake is reported with its line.
            do {
                _ = try WindowBrokerDaemon.parse(setting)
            } catch {
                throw mistake("\(key) = \(value): " + Self.withoutDashes(WindowBrokerDaemon.message(for: error)) + " (\(key): \(known.help))")
            }
            guard !given.contains(key) else { continue }  // the command line wins
            arguments += setting
        }
        do {
            _ = try WindowBrokerDaemon.parse(arguments)
        } catch {
            throw ConfigFileError(path: path, line: nil, problem: Self.withoutDashes(WindowBrokerDaemon.message(for: error)))
        }
        return arguments + commandLine
    }

    /// Every setting the file may hold (the daemon's long flags, as its help lists them), with
    /// its help line and whether it takes a value or is a switch (true or false).
    static var settings: [String: (help: String, takesValue: Bool)] {
        var settings: [String: (help: String, takesValue: Bool)] = [:]
        let lines = WindowBrokerDaemon.helpMessage(columns: 10_000).split(separator: "\n").map(String.init)
        for (i, line) in lines.enumerated() {
            guard let match = line.wholeMatch(of: /\s*--([a-z0-9][a-z0-9-]*)( <[^>]+>)?(\s+(.*))?/) else { continue }
            // A long name has its help on the next line.
            let help = match.output.4.map(String.init) ?? (i + 1 < lines.count ? lines[i + 1].trimmingCharacters(in: .whitespaces) : "")
            settings[String(match.output.1)] = (help, match.output.2 != nil)
        }
        for name in ["help", "version", "config"] { settings[name] = nil }
        return settings
    }

    /// The parser's message in the file's words: `max-workers`, not `--max-workers <max-workers>`.
    static func withoutDashes(_ message: String) -> String {
        message.replacing(/'?--([a-z0-9-]+)( <[a-z0-9-]+>)?'?/) { "'\($0.output.1)'" }
    }
}

/// A mistake in the configuration file: where it is and what is wrong, without the command
/// line's usage text, which is about flags the person did not type.
struct ConfigFileError: Error, CustomStringConvertible {
    var path: String
    var line: Int?
    var problem: String

    var description: String {
        guard let line else { return problem.contains(path) ? problem : "\(path): \(problem)" }
        return "\(path):\(line): \(problem)"
    }
}
