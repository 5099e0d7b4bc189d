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
            if explicitPath != nil || FileManager.default.fileExists(atPath: path) { throw ValidationError(error.message) }
            return commandLine
        }
        let given = Set(commandLine.filter { $0.hasPrefix("--") }.map { String($0.split(separator: "=", maxSplits: 1)[0].dropFirst(2)) })
        var arguments: [String] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ValidationError("\(path):\(number + 1): expected `key = value`, found '\(line)'")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }), key != "config" else {
                throw ValidationError("\(path):\(number + 1): '\(key)' is not a setting (the flags' names without --)")
            }
            guard !given.contains(key) else { continue }  // the command line wins
            switch value.lowercased() {
            case "true", "yes": arguments.append("--\(key)")
            case "false", "no": continue
            default: arguments += ["--\(key)", value]
            }
        }
        // The file alone must make sense: its mistakes are reported as the file's.
        do {
            _ = try WindowBrokerDaemon.parse(arguments)
        } catch {
            throw ValidationError("\(path): \(WindowBrokerDaemon.message(for: error))")
        }
        return arguments + commandLine
    }
}
