import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

struct Post: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Post an update event to every connected scene of an app (what its model posts).",
        discussion: "Every connected scene of APP receives it in the app's one order of updates. With --wait the reply comes once each of them acknowledged it and gives the delivery times.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app id.", completion: LiveCompletion.apps) var app: String
    @Argument(help: "The event's name, e.g. noteChanged.") var name: String
    @Option(name: .customLong("payload-json"), help: "The payload: a JSON object (plist types; {\"$date\": ...}, {\"$data\": ...}, {\"$url\": ...} for the rest); @PATH reads it from a file, @- from stdin.")
    var payloadJSON: String?
    @Flag(help: "Reply after every connected scene acknowledged the event (or dropped it, or went away).") var wait = false
    @Option(help: "With --wait: stop waiting after this many seconds.") var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 seconds") }
    }

    func run() async throws {
        let global = self.global
        var payload: [String: PlistValue] = [:]
        if let payloadJSON {
            do {
                let text = try jsonArgument(payloadJSON)
                guard case .dictionary(let object) = try PlistValue.parse(json: text) else {
                    throw ValidationError("--payload-json must be a JSON object, not \(payloadJSON.prefix(40))")
                }
                payload = object
            } catch let error as BrokerError {
                throw ValidationError("--payload-json: \(error.message)")
            }
        }
        let request = ControlRequest.post(.with {
            $0.appID = app
            $0.name = name
            $0.payload = PlistValue.wire(dictionary: payload)
            $0.wait = self.wait
            $0.waitTimeoutSeconds = timeout
        })
        let wait = self.wait
        try await global.withBroker { client in
            guard case .post(let reply) = try await client.request(request, timeout: .seconds(Int64(timeout) + 30)) else {
                throw BrokerError.unexpectedReply
            }
            var object: [String: PlistValue] = [
                "sequence": .integer(Int64(reply.sequence)),
                "receivers": .integer(Int64(reply.receivers)),
                "delivered": .integer(Int64(reply.delivered)),
            ]
            if wait {
                object["p50Micros"] = reply.delivered > 0 ? .integer(Int64(reply.p50Micros)) : .null
                object["maxMicros"] = reply.delivered > 0 ? .integer(Int64(reply.maxMicros)) : .null
                object["unacknowledged"] = .list(reply.unacknowledged.map { .string($0) })
                object["dropped"] = .list(reply.dropped.map { .string($0) })
            }
            global.emit(.dictionary(object)) {
                guard wait else { return "posted #\(reply.sequence) to \(reply.receivers) scene\(reply.receivers == 1 ? "" : "s")" }
                var line = "posted #\(reply.sequence): \(reply.delivered) of \(reply.receivers) acknowledged"
                if reply.delivered > 0 { line += ", p50 \(Output.latency(micros: Double(reply.p50Micros))), last \(Output.latency(micros: Double(reply.maxMicros)))" }
                if !reply.unacknowledged.isEmpty { line += "\n  not acknowledged: \(reply.unacknowledged.joined(separator: ", "))" }
                if !reply.dropped.isEmpty { line += "\n  dropped (queue full): \(reply.dropped.joined(separator: ", "))" }
                return line
            }
        }
    }
}

struct Defaults: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "defaults",
        abstract: "Read and change an app's shared defaults (what every scene of the app sees).",
        discussion: """
            wmctl defaults APP                      every key and value
            wmctl defaults APP get KEY              one value (exit 1 when unset)
            wmctl defaults APP set KEY VALUE-JSON   e.g. set toolbarHidden true
            wmctl defaults APP delete KEY
            A change reaches every connected scene of the app.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app id.", completion: LiveCompletion.apps) var app: String
    @Argument(help: "get, set or delete (none: list every key).", completion: .list(["get", "set", "delete"])) var verb: String?
    @Argument(help: "The key.", completion: LiveCompletion.defaultsKeys) var key: String?
    @Argument(help: "For set: the value as JSON (true, 3, \"text\", {\"a\": 1}); @PATH reads it from a file, @- from stdin.") var value: String?

    func validate() throws {
        switch verb {
        case nil:
            guard key == nil else { throw ValidationError("say what to do with '\(key!)': get, set or delete") }
        case "get", "delete":
            guard key != nil, value == nil else { throw ValidationError("\(verb!) takes one KEY") }
        case "set":
            guard key != nil, value != nil else { throw ValidationError("set takes KEY and VALUE-JSON") }
        default:
            throw ValidationError("unknown verb '\(verb!)'; use get, set or delete")
        }
    }

    func run() async throws {
        let global = self.global
        var request = Windowbroker_V1_DefaultsRequest.with {
            $0.appID = app
            $0.key = self.key ?? ""
        }
        switch verb {
        case "set":
            let text = try jsonArgument(value!)
            do {
                request.value = try PlistValue.parse(json: text).wire
            } catch {
                throw ValidationError("VALUE-JSON: \(error.message) (a string needs quotes: '\"text\"')")
            }
        case "delete":
            request.remove = true
        default:
            break
        }
        let verb = self.verb
        let key = self.key
        let sent = request
        try await global.withBroker { client in
            guard case .defaults(let reply) = try await client.request(.defaults(sent)) else { throw BrokerError.unexpectedReply }
            let values = (try? PlistValue.dictionary(wire: reply.values, path: "defaults")) ?? [:]
            switch verb {
            case nil:
                global.emit(.dictionary(values)) {
                    values.isEmpty ? "(no defaults)" : values.keys.sorted().map { "\($0) = \(SessionDetail.value(values[$0]!))" }.joined(separator: "\n")
                }
            case "get":
                guard let value = values[key!] else {
                    throw BrokerError(.invalidRequest, "no default '\(key!)'")
                }
                global.emit(value) { Output.describe(value) }
            default:
                global.emit(.dictionary(["key": .string(key!), "sequence": .integer(Int64(reply.sequence)), "value": values[key!] ?? .null])) {
                    reply.sequence == 0 ? "\(key!): unchanged" : "\(key!) \(verb == "delete" ? "deleted" : "set") (#\(reply.sequence))"
                }
            }
        }
    }
}

/// A JSON argument as given, or read from the file after `@` (`@-`: standard input), for
/// values larger than a command line may carry.
func jsonArgument(_ argument: String) throws -> String {
    guard argument.hasPrefix("@") else { return argument }
    let path = String(argument.dropFirst())
    let data = path == "-" ? Data(Output.standardInput()) : FileManager.default.contents(atPath: path)
    guard let data else { throw ValidationError("cannot read \(path)") }
    return String(decoding: data, as: UTF8.self)
}
