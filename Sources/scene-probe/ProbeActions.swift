import Foundation
import IPCWire
import SceneWorker

/// The actions only a test needs (declared in `actions.json`): what the probe saw, a scene
/// that misbehaves on purpose, and the SDK's requests made directly.
@MainActor
enum ProbeActions {
    /// The outcome of a probe action; nil when `action` is not one (the app's turn).
    static func perform(_ action: SceneAction, in scene: Scene, probe: ProbeSceneDelegate) async -> ActionOutcome? {
        switch action.name {
        case "state":
            return .performed(state(scene, probe: probe))
        case "request-activation":
            // An activation of any activity type (refused unless the app declares it), after
            // an optional delay: the scene-driven path without the app's own rules.
            guard let note = action["noteID"]?.stringValue, let type = action["activityType"]?.stringValue else {
                return .declined("request-activation needs noteID=... activityType=... [presentation=...] [delayMs=N]")
            }
            let presentation = action["presentation"]?.stringValue.flatMap(Presentation.init(rawValue:)) ?? .standard
            if let delay = action["delayMs"]?.integerValue, delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
            let activity = UserActivity(activityType: type, title: note, targetContentIdentifier: note, userInfo: ["noteID": .string(note)])
            return await .performing {
                .string(try await scene.requestActivation(activity: activity, options: .init(presentation: presentation)).session.description)
            }
        case "open-other-app":
            // A scene may only open scenes of its own app: this shows the refusal.
            guard let other = action["app"]?.stringValue else { return .declined("open-other-app needs app=...") }
            return await .performing { .string(try await scene.requestActivation(app: AppID(other)).session.description) }
        case "retitle":
            // A flood of title changes (each one a scene update the broker must absorb).
            let count = max(1, min(100_000, Int(action["count"]?.integerValue ?? 1)))
            for i in 0..<count { scene.title = "title \(i)" }
            return .performed(.integer(Int64(count)))
        case "set-activity-type":
            // Publishes a current activity of another type (refused unless the app declares it).
            guard let type = action["type"]?.stringValue else { return .declined("set-activity-type needs type=...") }
            scene.userActivity = UserActivity(activityType: type, title: scene.title, userInfo: scene.userActivity?.userInfo ?? [:])
            return .performed(.string(type))
        case "set-default":
            // Any shared default, as JSON (a refusal shows the broker's code).
            guard let key = action["key"]?.stringValue, let json = action["json"]?.stringValue else {
                return .declined("set-default needs key=K json=VALUE")
            }
            return await .performing {
                let value = try PlistValue.parse(json: json)
                try await scene.defaults.set(value, forKey: key)
                return value
            }
        case "post":
            // An update event of any name, e.g. to measure fan-out or try the limits.
            guard let name = action["name"]?.stringValue else { return .declined("post needs name=N") }
            let size = Int(action["bytes"]?.integerValue ?? 0)
            let payload: [String: PlistValue] = size > 0 ? ["blob": .string(String(repeating: "x", count: size))] : [:]
            return await .performing { .integer(Int64(try await scene.post(UpdateEvent(name: name, payload: payload)))) }
        case "store":
            // Any scene-storage value (a string); an empty value removes the key.
            guard let key = action["key"]?.stringValue, let value = action["value"]?.stringValue else {
                return .declined("store needs key=K value=V")
            }
            scene.storage[key] = value.isEmpty ? nil : .string(value)
            return .performed(state(scene, probe: probe))
        case "add-command":
            // Inserts a command into the app's menu at runtime; a collision is declined with the broker's reason.
            guard let id = action["id"]?.stringValue, let menu = action["menu"]?.stringValue else {
                return .declined("add-command needs id=... menu=... [shortcut=...] [after=ID]")
            }
            let item = MenuItem.command(id: id, title: action["title"]?.stringValue ?? id, shortcut: action["shortcut"]?.stringValue)
            return await .performing {
                try await scene.changeMenu { builder in
                    if let after = action["after"]?.stringValue {
                        builder.insertSibling(item, after: after)
                    } else {
                        builder.insertChild(item, atEndOf: menu)
                    }
                }
                return .string(id)
            }
        case "remove-command":
            guard let id = action["id"]?.stringValue else { return .declined("remove-command needs id=...") }
            return await .performing {
                try await scene.changeMenu { $0.remove(id) }
                return .string(id)
            }
        case "print":
            // A line on stdout (with print, as an app would) and one on stderr: the broker logs
            // both under this session.
            let text = action["text"]?.stringValue ?? "hello"
            print("stdout: \(text)")
            FileHandle.standardError.write(Data("stderr: \(text)\n".utf8))
            return .performed(.string(text))
        case "set-restore-delay":
            guard let ms = action["ms"]?.integerValue else { return .declined("set-restore-delay needs ms=N") }
            scene.storage[ProbeSceneDelegate.restoreDelayKey] = ms > 0 ? .integer(ms) : nil
            return .performed(.integer(ms))
        case "hang-on-save":
            probe.hangOnSave = true
            return .performed(.bool(true))
        case "set-save-delay":
            guard let ms = action["ms"]?.integerValue, ms >= 0 else { return .declined("set-save-delay needs ms=N") }
            probe.saveDelayMilliseconds = Int(ms)
            return .performed(.integer(ms))
        case "hang":
            // A window stuck in its own code: blocks the main thread until the file `until`
            // exists (or `seconds` pass, at most 60). Nothing else runs in this scene meanwhile.
            let until = action["until"]?.stringValue
            let deadline = Date().addingTimeInterval(Double(min(60, action["seconds"]?.integerValue ?? 60)))
            // Said before it holds: a test knows the scene is stuck from here on.
            FileHandle.standardError.write(Data("hang: holding the main thread\n".utf8))
            while Date() < deadline, !(until.map { FileManager.default.fileExists(atPath: $0) } ?? false) {
                usleep(20_000)
            }
            return .performed(.bool(true))
        case "close-socket":
            // A process that loses its connection and runs on: the broker must stop and reap it.
            shutdown(3, Int32(SHUT_RDWR))
            sleep(3600)  // blocks the main thread on purpose: nothing answers any more
            return .performed(nil)
        case "allocate":
            guard let megabytes = action["megabytes"]?.integerValue, megabytes > 0, megabytes <= 4096 else {
                return .declined("allocate needs megabytes=N (1...4096)")
            }
            probe.ballast += touchedMegabytes(Int(megabytes))
            return .performed(.integer(Int64(probe.ballast.count) << 20))
        case "fill-cache":
            guard let megabytes = action["megabytes"]?.integerValue, megabytes > 0, megabytes <= 4096 else {
                return .declined("fill-cache needs megabytes=N (1...4096)")
            }
            probe.cache += touchedMegabytes(Int(megabytes))
            return .performed(.integer(Int64(probe.cache.count) << 20))
        case "open-files":
            // What this process holds open: the broker must not have leaked anything but fd 3.
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            let targets = fds.compactMap { fd in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)).map { "\(fd) -> \($0)" }
            }
            return .performed(.list(targets.sorted().map { .string($0) }))
        case "threads":
            // Where the delegate runs, and which threads the process has: the SDK serves the
            // broker's socket from the main thread, where the main actor runs too.
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            let names = tasks.compactMap { task in
                (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let thread = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
            return .performed(.dictionary([
                "onMainThread": .bool(thread == "\(getpid())/task/\(getpid())"),
                "threads": .list(names.sorted().map { .string($0) }),
            ]))
        case "environment":
            // Which service-manager variables reached this worker (none should).
            let env = ProcessInfo.processInfo.environment
            let leaked = ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID"]
                .filter { env[$0] != nil }
            return .performed(.dictionary([
                "serviceManagerVariables": .list(leaked.map { .string($0) }),
                "WINDOWBROKER_FD": env["WINDOWBROKER_FD"].map { .string($0) } ?? .null,
            ]))
        case "flood":
            // A scene that misbehaves: `count` requests written straight to the broker's
            // socket, none waited for (the SDK keeps one in flight). The broker must stay
            // bounded and answer the excess with resourceExhausted; the answers are ignored.
            let count = max(1, min(1_000_000, Int(action["count"]?.integerValue ?? 1000)))
            let target = action["session"]?.stringValue
            Thread.detachNewThread { _ = Flood.write(count: count, activating: target) }  // this answer goes out meanwhile
            return .performed(.integer(Int64(count)))
        case "run":
            // A program the scene starts (a helper, a shell's command): what it may do through
            // the broker's other doors is what the scene may. `args` is split at spaces.
            guard let program = action["program"]?.stringValue else { return .declined("run needs program=PATH [args=...]") }
            let arguments = (action["args"]?.stringValue ?? "").split(separator: " ").map(String.init)
            return await .performing {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: program)
                process.arguments = arguments
                let output = Pipe()
                process.standardOutput = output
                process.standardError = output
                try process.run()
                let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                return .dictionary(["status": .integer(Int64(process.terminationStatus)), "output": .string(text)])
            }
        case "exit":
            // Ends the process on its own with this status (0: a clean exit, not a crash).
            exit(Int32(truncatingIfNeeded: action["code"]?.integerValue ?? 0))
        case "crash":
            // A real fault (not a signal sent by kill, which a crash handler could survive).
            UnsafeMutablePointer<Int>(bitPattern: 0x10)!.pointee = 1
            return .performed(nil)
        default:
            return nil
        }
    }

    /// Everything the probe saw, and the app's published activity (its userInfo, and its
    /// interaction state when that is a JSON object) as the app's own view of itself.
    static func state(_ scene: Scene, probe: ProbeSceneDelegate) -> PlistValue {
        var state: [String: PlistValue] = [:]
        if let activity = scene.userActivity {
            state.merge(activity.userInfo) { _, new in new }
            if let data = activity.interactionState,
               let object = try? PlistValue.parse(json: String(decoding: data, as: UTF8.self)), case .dictionary(let fields) = object {
                state.merge(fields) { _, new in new }
            }
        }
        let app = probe.app
        state.merge([
            "callbacks": .list(app.callbacks.map { .string($0) }),
            "discarded": .list(app.discardedSessions.map { .string($0) }),
            "configurationQuestions": .integer(Int64(app.configurationQuestions)),
            "continued": .list(probe.continued.map { .string($0) }),
            "pid": .integer(Int64(getpid())),
            "state": .string(scene.state.rawValue),
            "refusedUpdates": .list(probe.refusedUpdates.map { .string($0) }),
            "configuration": .string(scene.session.configuration),
            "delegateName": .string(scene.session.delegateName),
            "focusPath": .string(scene.focusPath.joined(separator: "/")),
            "updates": .integer(Int64(probe.updatesReceived)),
            "lastSequence": .integer(Int64(scene.lastUpdateSequence)),
            "sequences": .list(probe.sequences.map { .integer(Int64($0)) }),
            "droppedUpdates": .list(probe.droppedUpdates.map { .list([.integer(Int64($0.0)), .integer(Int64($0.1))]) }),
            "toolbarHidden": .bool(probe.toolbarHidden),
            "toolbarHiddenAtConnect": .bool(probe.toolbarHiddenAtConnect),
            "toolbarChanges": .integer(Int64(probe.toolbarChanges)),
            "scrollOffset": scene.storage["scrollOffset"] ?? .null,
            "storage": .dictionary(scene.storage.all),
            "isKey": .bool(scene.isKey),
            "isProminent": .bool(scene.isProminent),
            "keyChanges": .list(probe.keyChanges.map { .string($0) }),
            "sizes": .list(probe.sizes.map { .string($0) }),
        ]) { _, new in new }
        return .dictionary(state)
    }

    /// Allocates and touches `megabytes` so the pages are really resident (PSS grows).
    private static func touchedMegabytes(_ megabytes: Int) -> [UnsafeMutableRawBufferPointer] {
        (0..<megabytes).map { _ in
            let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
            // Non-zero bytes on every page: nothing the kernel can share or leave unmapped.
            block.initializeMemory(as: UInt8.self, repeating: 0x5a)
            return block
        }
    }
}

/// Requests written to fd 3 by hand, past the SDK.
enum Flood {
    /// Writes `count` framed post requests (or, with `target`, activations of that session)
    /// to fd 3, waiting for room with poll; returns how many were written whole.
    static func write(count: Int, activating target: String?) -> Int {
        var written = 0
        for i in 0..<count {
            var envelope = Envelope()
            envelope.id = (1 << 40) + UInt64(i)
            envelope.body = .controlRequest(.with {
                if let target {
                    $0.kind = .activate(.with { $0.sessionID = target })
                } else {
                    $0.kind = .post(.with { $0.name = "flood" })
                }
            })
            guard let body = try? envelope.serializedBytes() as [UInt8] else { break }
            let length = UInt32(body.count).bigEndian
            var frame = withUnsafeBytes(of: length) { Array($0) }
            frame += body
            var offset = 0
            while offset < frame.count {
                let n = frame[offset...].withUnsafeBytes { Glibc.write(3, $0.baseAddress, $0.count) }
                if n > 0 {
                    offset += n
                } else if n < 0, errno == EAGAIN || errno == EINTR {
                    var descriptor = pollfd(fd: 3, events: Int16(POLLOUT), revents: 0)
                    guard poll(&descriptor, 1, 5000) > 0 else { return written }
                } else {
                    return written
                }
            }
            written += 1
        }
        return written
    }
}
