/// wire-fuzz: what a peer can send, through the code that reads it.
///
/// Built with `make fuzz` (`-sanitize=fuzzer`, libFuzzer drives `LLVMFuzzerTestOneInput`);
/// built normally it replays inputs (`wire-fuzz FILE...`), which is how a crash libFuzzer
/// found becomes a regression check. One input goes three ways: as a byte stream through the
/// real framing pipeline, as one envelope, and as text (plist JSON, a shortcut, a search).
/// Every decoded envelope has its values validated the way the broker and the SDK do.
import Foundation
import IPCWire
import NIOCore
import NIOEmbedded
import WindowBroker

func fuzzOne(_ bytes: [UInt8]) {
    let channel = EmbeddedChannel()
    if (try? channel.pipeline.syncOperations.addWireFraming(maxFrameBytes: 1 << 16)) != nil {
        _ = try? channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        while let envelope = try? channel.readInbound(as: Envelope.self) { validate(envelope) }
    }
    _ = try? channel.finish()
    if let envelope = try? Envelope(serializedBytes: bytes) { validate(envelope) }
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? PlistValue.parse(json: text)
    _ = try? KeyShortcut(parsing: text)
    _ = try? SearchQuery.match(text)
}

private func activity(_ wire: Windowbroker_V1_UserActivity) {
    _ = try? UserActivity(wire: wire)
}

private func dictionary(_ wire: Windowbroker_V1_PlistDictionary) {
    _ = try? PlistValue.dictionary(wire: wire)
}

private func validate(_ envelope: Envelope) {
    switch envelope.body {
    case .controlRequest(let request):
        switch request.kind {
        case .open(let open): activity(open.activity)
        case .send(let send): dictionary(send.arguments)
        case .post(let post): dictionary(post.payload)
        case .defaults(let defaults): _ = try? PlistValue(wire: defaults.value)
        case .key(let key): _ = try? KeyShortcut(parsing: key.shortcut)
        case .search(let search): _ = try? SearchQuery.match(search.query)
        case .menuChange(let change): for operation in change.operations { _ = try? MenuOperation(wire: operation) }
        default: break
        }
    case .workerMessage(let message):
        switch message.kind {
        case .sceneUpdate(let update): activity(update.userActivity)
        case .restorationActivity(let reply): activity(reply.activity)
        case .storage(let storage): dictionary(storage.set)
        case .actionResult(let result): _ = try? PlistValue(wire: result.value)
        default: break
        }
    case .workerCommand(let command):
        switch command.kind {
        case .connect(let connect):
            activity(connect.restorationActivity)
            connect.userActivities.forEach(activity)
            dictionary(connect.defaults)
            dictionary(connect.storage)
        case .update(let delivery):
            if case .event(let event)? = delivery.kind { _ = try? UpdateEvent(wire: event, sequence: delivery.sequence) }
        case .performAction(let action): dictionary(action.arguments)
        default: break
        }
    case .error(let error):
        _ = BrokerError(wire: error)
    default:
        break
    }
}

/// A starting corpus: one framed envelope of each kind a peer sends, and text inputs.
func writeSeeds(to directory: String) {
    func framed(_ envelopes: [Envelope]) -> [UInt8] {
        envelopes.flatMap { envelope -> [UInt8] in
            let body: [UInt8] = (try? envelope.serializedBytes()) ?? []
            return withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + body
        }
    }
    let hello = Envelope.with { $0.id = 1; $0.hello = .current(.control, clientName: "seed") }
    let activity = UserActivity(activityType: "notes.edit", title: "Seed", targetContentIdentifier: "x",
                                userInfo: ["noteID": .string("x"), "nested": .dictionary(["list": .list([.integer(1), .date(Date(timeIntervalSince1970: 0))])])],
                                keywords: ["seed"], isEligibleForSearch: true)
    let requests: [Windowbroker_V1_ControlRequest.OneOf_Kind] = [
        .open(.with { $0.appID = "notes"; $0.activity = activity.wire }),
        .post(.with { $0.appID = "notes"; $0.name = "noteChanged"; $0.payload = PlistValue.wire(dictionary: ["text": .string("hi")]) }),
        .defaults(.with { $0.appID = "notes"; $0.key = "toolbarHidden"; $0.value = PlistValue.bool(true).wire }),
        .key(.with { $0.shortcut = "ctrl+shift+u" }),
        .search(.with { $0.query = "pass* café" }),
        .menuChange(.with { $0.operations = [.with { $0.insert = .with {
            $0.childOf = "view"
            $0.element = .with { $0.command = .with { $0.id = "x"; $0.title = "X"; $0.shortcut = "ctrl+alt+x" } }
        } }] }),
    ]
    var seeds: [(String, [UInt8])] = requests.enumerated().map { index, request in
        ("request-\(index)", framed([hello, .with { $0.id = 2; $0.controlRequest = .with { $0.kind = request } }]))
    }
    seeds.append(("worker-update", framed([.with { $0.id = 3; $0.workerMessage = .with { $0.sceneUpdate = .with { $0.userActivity = activity.wire } } }])))
    seeds.append(("worker-storage", framed([.with { $0.id = 4; $0.workerMessage = .with { $0.storage = .with { $0.set = PlistValue.wire(dictionary: ["k": .integer(1)]) } } }])))
    seeds.append(("json", Array(#"{"a": [1, 2.5, true, null, {"$date": "2026-11-21T10:00:00Z"}, {"$data": "AAE="}]}"#.utf8)))
    seeds.append(("shortcut", Array("Shift+Ctrl+bracketleft".utf8)))
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    for (name, bytes) in seeds {
        _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes))
    }
    print("wrote \(seeds.count) seeds to \(directory)")
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM links an executable's entry point as `<module>_main`; here it hands over to libFuzzer.
@_cdecl("wire_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzInput(data, size) }
}
#else
@main
struct Replay {
    static func main() {
        let paths = CommandLine.arguments.dropFirst()
        if paths.first == "--write-seeds", let directory = paths.dropFirst().first {
            writeSeeds(to: directory)
            return
        }
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("usage: wire-fuzz FILE... (replays fuzz inputs; `make fuzz` fuzzes)\n".utf8))
            exit(2)
        }
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("wire-fuzz: cannot read \(path)\n".utf8))
                exit(2)
            }
            fuzzOne(Array(data))
        }
        print("replayed \(paths.count) input(s)")
    }
}
#endif
