import Foundation
import IPCWire
import XCTest

/// The JSON wmctl prints is what `docs/schema/*.schema.json` say it is: each command's real
/// output, from a real broker, checked against its schema (the subset of JSON Schema those
/// files use: type, enum, properties, required, additionalProperties, items).
final class JSONSchemaTests: BrokerTestCase {
    static var schemaDirectory: String { BrokerHarness.repository.appendingPathComponent("docs/schema").path }

    private func check(_ name: String, _ arguments: [String], expectExit: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws {
        try Self.check(name, arguments, on: harness, expectExit: expectExit, file: file, line: line)
    }

    /// `wmctl --json ARGUMENTS` against `harness` matches docs/schema/NAME.schema.json.
    static func check(_ name: String, _ arguments: [String], on harness: BrokerHarness, expectExit: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = harness.wmctl(["--json"] + arguments)
        XCTAssertEqual(result.code, expectExit, "wmctl \(arguments.joined(separator: " ")): \(result.stderr)", file: file, line: line)
        let output = try JSONDecoder().decode(PlistValue.self, from: Data(result.stdout.utf8))
        let schemaData = try XCTUnwrap(FileManager.default.contents(atPath: Self.schemaDirectory + "/\(name).schema.json"), "no schema for \(name)")
        let schema = try JSONDecoder().decode(PlistValue.self, from: schemaData)
        let problems = Self.validate(output, against: schema, at: "$")
        XCTAssertEqual(problems, [], "wmctl \(arguments.joined(separator: " ")) does not match docs/schema/\(name).schema.json", file: file, line: line)
    }

    static func validate(_ value: PlistValue, against schema: PlistValue, at path: String) -> [String] {
        guard case .dictionary(let rules) = schema else { return [] }
        var problems: [String] = []
        func typeName(_ value: PlistValue) -> [String] {
            switch value {
            case .string, .url, .date, .data: ["string"]
            case .integer: ["integer", "number"]
            case .real: ["number"]
            case .bool: ["boolean"]
            case .null: ["null"]
            case .list: ["array"]
            case .dictionary: ["object"]
            }
        }
        if let type = rules["type"] {
            let allowed: [String] = if case .list(let names) = type { names.compactMap(\.stringValue) } else { [type.stringValue ?? ""] }
            if Set(typeName(value)).isDisjoint(with: allowed) { problems.append("\(path): \(typeName(value)[0]) where \(allowed) is allowed") }
        }
        if case .list(let options)? = rules["enum"], !options.contains(value) {
            problems.append("\(path): \(value) is not one of \(options)")
        }
        if case .dictionary(let object) = value {
            let properties: [String: PlistValue] = if case .dictionary(let p)? = rules["properties"] { p } else { [:] }
            if case .list(let required)? = rules["required"] {
                for key in required.compactMap(\.stringValue) where object[key] == nil { problems.append("\(path).\(key): missing") }
            }
            if rules["additionalProperties"] == .bool(false) {
                for key in object.keys where properties[key] == nil { problems.append("\(path).\(key): not in the schema") }
            }
            for (key, child) in object { if let rule = properties[key] { problems += validate(child, against: rule, at: "\(path).\(key)") } }
        }
        if case .list(let items) = value, let rule = rules["items"] {
            for (index, item) in items.enumerated() { problems += validate(item, against: rule, at: "\(path)[\(index)]") }
        }
        return problems
    }

    func testEveryDocumentedOutputMatchesItsSchema() throws {
        let session = try XCTUnwrap(try harness.json("open", "notes", "--title", "Schema", "--info", "noteID=schema")["session"] as? String)
        _ = try harness.json("send", session, "type", "--arg", "text=schema words")
        _ = try harness.json("send", session, "print", "--arg", "text=logged")
        try check("status", ["status"])
        try check("apps", ["apps"])
        try check("session-state", ["open", "notes", "--new", "--title", "Second"])
        try check("session-state", ["background", session])
        try check("sessions", ["sessions"])
        try check("show", ["show", session])
        try check("send", ["send", session, "state"])
        try check("send", ["send", session, "no-such-action"], expectExit: 1)
        try check("actions", ["actions", session])
        try check("actions", ["actions", "--app", "notes"])
        try check("post", ["post", "notes", "ping", "--wait"])
        try check("post", ["post", "notes", "ping"])
        try harness.eventually("indexed") { !(try harness.jsonList("search", "schema")).isEmpty }
        try check("search", ["search", "schema"])
        try check("key", ["key", "ctrl+u"], expectExit: 1)  // the key scene (Second) has no text to uppercase
        try check("key", ["key", "ctrl+q"], expectExit: 1)
        try check("key", ["menu", "invoke", "notes.pin"])
        try harness.eventually("logged") { !(try harness.jsonList("logs", session)).isEmpty }
        try check("logs", ["logs", session])
        try check("ping", ["ping", "--count", "3"])
        try check("display", ["display"])
        try check("pressure", ["pressure"])
        try check("system-ui-hide", ["overlay", "--hide"])
        try check("top", ["top", "--once"])
        try check("pressure-simulate", ["pressure", "simulate", "warning"])
        try check("menu", ["menu"])
        try check("menu", ["menu", "--app", "notes"])
        try check("commands", ["commands"])
        try check("commands", ["commands", "--overlay"])
        try check("defaults-change", ["defaults", "notes", "set", "toolbarHidden", "--json", "true"])
        try check("defaults", ["defaults", "notes"])
        try check("defaults-change", ["defaults", "notes", "delete", "toolbarHidden"])
        // watch prints one object per line: each line is checked.
        let watch = try harness.startWatch(["--count", "3", "--timeout", "20"])
        _ = try harness.json("activate", session)
        XCTAssertEqual(watch.wait().code, 0)
        let schema = try JSONDecoder().decode(PlistValue.self, from: try XCTUnwrap(FileManager.default.contents(atPath: Self.schemaDirectory + "/watch.schema.json")))
        let lines = watch.output.split(separator: "\n")
        XCTAssertEqual(lines.count, 3)
        for line in lines {
            XCTAssertEqual(Self.validate(try JSONDecoder().decode(PlistValue.self, from: Data(line.utf8)), against: schema, at: "$"), [], String(line))
        }
        try check("error", ["show", UUID().uuidString], expectExit: 1)
        try check("error", ["stauts"], expectExit: 2)
    }

    /// Every JSON shape wmctl documents has its schema, and every schema is checked by a test
    /// (above, or beside the display it needs: SystemUITests).
    func testEverySchemaIsUsed() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let source = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8) }.joined()
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.schemaDirectory).filter { $0.hasSuffix(".schema.json") }
        for name in names.map({ String($0.dropLast(".schema.json".count)) }) {
            XCTAssertTrue(source.contains("check(\"\(name)\"") || source.contains("/\(name).schema.json"), "docs/schema/\(name).schema.json is checked by no test")
        }
    }

    func testTheValidatorCatchesWhatItShould() throws {
        let schema = try JSONDecoder().decode(PlistValue.self, from: Data(#"{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false}"#.utf8))
        XCTAssertEqual(Self.validate(.dictionary(["a": .integer(1)]), against: schema, at: "$"), [])
        XCTAssertFalse(Self.validate(.dictionary(["a": .string("1")]), against: schema, at: "$").isEmpty)
        XCTAssertFalse(Self.validate(.dictionary([:]), against: schema, at: "$").isEmpty)
        XCTAssertFalse(Self.validate(.dictionary(["a": .integer(1), "b": .null]), against: schema, at: "$").isEmpty)
    }
}
