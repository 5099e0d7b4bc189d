import Foundation
import IPCWire
import SceneWorker

/// One note: text and a cursor (a character offset). Its restoration activity carries the
/// note id and text in `userInfo` and the cursor as interaction state.
@MainActor
final class NoteSceneDelegate: SceneDelegate {
    static let activityType = "notes.edit"

    private unowned let app: NotesAppDelegate
    var noteID = ""
    var text = ""
    var cursor = 0
    /// The note's revision this window's text is at (see `NoteStore`).
    var revision: Int64 = 0
    /// Test hook: how long restoreInteractionState takes next time (kept in the restoration activity).
    var restoreDelayMilliseconds: Int64 = 0
    /// Test hook: stop answering when asked for the restoration activity.
    var hangOnSave = false
    /// Test hook: how long producing the restoration activity takes (a slow save, not a hang).
    var saveDelayMilliseconds = 0
    var continued: [String] = []
    /// Codes of the scene updates the broker refused.
    var refusedUpdates: [String] = []
    /// Update events received, the sequences of everything received in the app's order
    /// (the last 512), and the drop notices (from, to).
    var updatesReceived = 0
    var sequences: [UInt64] = []
    var droppedUpdates: [(UInt64, UInt64)] = []
    /// The shared default `toolbarHidden`, as observed (the KVO pattern), and as it was in willConnect.
    var toolbarHidden = false
    var toolbarHiddenAtConnect = false
    var toolbarChanges = 0
    /// Tags (keywords only) and whether the note may be found by search (it may, unless told not).
    var tags: [String] = []
    var searchable = true
    /// Keyboard-command state: pinned (Pin / Unpin Note) and bookmarks added.
    var pinned = false
    var bookmarks = 0
    /// didBecomeKey / didResignKey in the order they came, and the window sizes it was given.
    private var keyChanges: [String] = []
    private var sizes: [String] = []
    /// Lines this window started dragging, and lines dropped on it.
    private var drags: [String] = []
    private var drops: [String] = []
    /// Memory the scene holds on purpose (`allocate`): like user data, kept on a warning.
    private var ballast: [UnsafeMutableRawBufferPointer] = []
    /// A cache (`fill-cache`): dropped on a memory warning.
    private var cache: [UnsafeMutableRawBufferPointer] = []

    init(app: NotesAppDelegate) {
        self.app = app
    }

    private func record(_ callback: String) {
        app.callbacks.append(callback)
    }

    func willConnect(to scene: Scene, options: ConnectionOptions) {
        record("willConnect")
        if let restoration = scene.session.restorationActivity {
            load(restoration)
        } else if let activity = options.userActivities.first(where: { $0.activityType == Self.activityType }) {
            load(activity)
            if let requested = activity.interactionState.flatMap(Self.decodeCursor) { cursor = min(requested, text.count) }
        }
        if noteID.isEmpty { noteID = scene.session.id.description }
        app.drafts.remember(note: noteID, session: scene.session.id)
        catchUp()
        // Shared defaults are in place before willConnect: a new window starts the way the others look.
        toolbarHidden = scene.defaults["toolbarHidden"]?.boolValue ?? false
        toolbarHiddenAtConnect = toolbarHidden
        let changes = scene.defaults.changes(for: "toolbarHidden")
        Task { [weak self] in
            for await value in changes {
                self?.toolbarHidden = value?.boolValue ?? false
                self?.toolbarChanges += 1
            }
        }
        if let title = options.userActivities.first?.title, !title.isEmpty { scene.title = title }
        scene.activationConditions = (["*"], [noteID])
        publish(scene)
        if let child = options.userActivities.first?.userInfo["openOnConnect"]?.stringValue {
            // Asking for another scene from inside willConnect: it must not deadlock.
            Task {
                _ = try? await scene.requestActivation(activity: UserActivity(
                    activityType: Self.activityType, title: child, targetContentIdentifier: child, userInfo: ["noteID": .string(child)]))
            }
        }
    }

    private func load(_ activity: UserActivity) {
        noteID = activity.userInfo["noteID"]?.stringValue ?? activity.targetContentIdentifier ?? noteID
        tags = activity.keywords.filter { $0.hasPrefix("#") }
        searchable = activity.isEligibleForSearch || activity.userInfo["text"] == nil
        text = activity.userInfo["text"]?.stringValue ?? text
        revision = activity.userInfo["revision"]?.integerValue ?? 0
        restoreDelayMilliseconds = activity.userInfo["restoreDelayMs"]?.integerValue ?? 0
    }

    /// Takes the model's text when it is newer than this window's: never the other way round.
    private func catchUp() {
        guard let saved = app.notes.load(note: noteID), saved.revision > revision else { return }
        text = saved.text
        revision = saved.revision
        cursor = min(cursor, text.count)
    }

    /// Every change of the text: on top of the newest revision, saved to the model, published.
    private func edit(_ scene: Scene, _ change: (inout String, inout Int) -> Void) {
        catchUp()
        change(&text, &cursor)
        cursor = max(0, min(cursor, text.count))
        revision += 1
        app.notes.save(.init(revision: revision, text: text), id: noteID)
        publish(scene)
    }

    func restoreInteractionState(_ scene: Scene, with activity: UserActivity, restoration: RestorationRequest) {
        record("restoreInteractionState")
        let restored = activity.interactionState.flatMap(Self.decodeCursor) ?? 0
        cursor = min(max(0, restored), text.count)
        publish(scene)  // the current activity carries the cursor again
        if restoreDelayMilliseconds > 0 {
            restoration.extend()
            let delay = restoreDelayMilliseconds
            Task { @MainActor in
                try? await Task.sleep(for: .milliseconds(delay))
                restoration.complete()
            }
        }
    }

    /// Typing: at the cursor, saved to the model, and told to the app's other windows.
    private func insert(_ inserted: String, in scene: Scene) async {
        edit(scene) { text, cursor in
            let at = min(cursor, text.count)
            text.insert(contentsOf: inserted, at: text.index(text.startIndex, offsetBy: at))
            cursor = at + inserted.count
        }
        await textChanged(scene)
    }

    private func textChanged(_ scene: Scene) async {
        app.drafts.save(text, session: scene.session.id)
        do {
            try await scene.post(UpdateEvent(name: "noteChanged", payload: [
                "noteID": .string(noteID), "text": .string(text), "revision": .integer(revision),
            ]))
        } catch let error as BrokerError {
            refusedUpdates.append("\(error.code)")
        } catch {}
    }

    // MARK: The keyboard (the window's)

    func insertText(_ scene: Scene, _ text: String) {
        Task { await insert(text, in: scene) }
    }

    func deleteBackward(_ scene: Scene) {
        guard cursor > 0 else { return }
        edit(scene) { text, cursor in
            text.remove(at: text.index(text.startIndex, offsetBy: cursor - 1))
            cursor -= 1
        }
        Task { await textChanged(scene) }
    }

    func keyPressed(_ scene: Scene, key: String) -> Bool {
        switch key {
        case "left": cursor = max(0, cursor - 1)
        case "right": cursor = min(text.count, cursor + 1)
        case "home", "up": cursor = 0
        case "end", "down": cursor = text.count
        default: return false
        }
        publish(scene)
        return true
    }

    // MARK: The pointer: a click places the cursor; a line dragged out becomes a note of its own

    /// Where the button went down, and the line under it.
    private var press: (point: Point, line: String)?

    func pointer(_ scene: Scene, _ event: PointerEvent) {
        switch event.kind {
        case .down:
            guard let index = scene.characterIndex(at: event.location, in: text) else { return }
            cursor = index
            press = (event.location, Self.line(in: text, at: index))
            publish(scene)
        case .moved:
            // A few pixels with the button down make it a drag, of the line it started on.
            guard let press, !scene.isDragging, !press.line.isEmpty, event.location.distance(to: press.point) > 8 else { return }
            let id = "line-" + UUID().uuidString.prefix(8).lowercased()
            let activity = UserActivity(
                activityType: Self.activityType, title: String(press.line.prefix(60)), targetContentIdentifier: id,
                userInfo: ["noteID": .string(id), "text": .string(press.line)])
            if scene.beginDrag(DragItem(activity: activity)) { drags.append(press.line) }
            self.press = nil
        case .up:
            press = nil
        }
    }

    /// A line dragged from a notes window: inserted before the line under the pointer (at the
    /// end when it is below the text). A line let go over its own window stays where it was.
    func drop(_ scene: Scene, activity: UserActivity, at point: Point) -> Bool {
        guard activity.activityType == Self.activityType, let line = activity.userInfo["text"]?.stringValue else { return false }
        if scene.isDragging { return true }
        drops.append(line)
        let at = scene.characterIndex(at: point, in: text).map { Self.lineStart(in: text, at: $0) }
        edit(scene) { text, cursor in
            if let at {
                text.insert(contentsOf: line + "\n", at: text.index(text.startIndex, offsetBy: at))
                cursor = at + line.count
            } else {
                text += (text.isEmpty || text.hasSuffix("\n") ? "" : "\n") + line
                cursor = text.count
            }
        }
        Task { await textChanged(scene) }
        return true
    }

    /// The line that holds the character at `index` (without its newline).
    static func line(in text: String, at index: Int) -> String {
        let start = lineStart(in: text, at: index)
        let rest = text.dropFirst(start)
        return String(rest.prefix { $0 != "\n" })
    }

    static func lineStart(in text: String, at index: Int) -> Int {
        let before = text.prefix(max(0, min(index, text.count)))
        guard let newline = before.lastIndex(of: "\n") else { return 0 }
        return before.distance(from: before.startIndex, to: newline) + 1
    }

    func didBecomeKey(_ scene: Scene) { keyChanges.append("didBecomeKey") }
    func didResignKey(_ scene: Scene) { keyChanges.append("didResignKey") }

    func sizeDidChange(_ scene: Scene, to size: WindowSize) { sizes.append("\(size)") }

    func willEnterForeground(_ scene: Scene) { record("willEnterForeground") }
    func didBecomeActive(_ scene: Scene) { record("didBecomeActive") }
    func willResignActive(_ scene: Scene) { record("willResignActive") }
    func didEnterBackground(_ scene: Scene) { record("didEnterBackground") }
    func didDisconnect(_ scene: Scene) { record("didDisconnect") }

    func didReceiveMemoryWarning(_ scene: Scene, level: MemoryWarningLevel) -> Int {
        record("didReceiveMemoryWarning")
        let freed = cache.reduce(0) { $0 + $1.count }
        cache.forEach { $0.deallocate() }
        cache.removeAll()
        return freed
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

    func `continue`(_ scene: Scene, activity: UserActivity) {
        record("continue")
        continued.append(activity.activityType)
    }

    func stateRestorationActivity(for scene: Scene) -> UserActivity? {
        record("stateRestorationActivity")
        if hangOnSave {
            // Simulates a scene stuck in its own code: the broker's deadline must fire.
            sleep(3600)  // blocks the main thread on purpose: nothing answers any more
        }
        if saveDelayMilliseconds > 0 { Thread.sleep(forTimeInterval: Double(saveDelayMilliseconds) / 1000) }
        return currentActivity(scene)
    }

    private func currentActivity(_ scene: Scene) -> UserActivity {
        var info: [String: PlistValue] = ["noteID": .string(noteID), "text": .string(text), "revision": .integer(revision)]
        if restoreDelayMilliseconds > 0 { info["restoreDelayMs"] = .integer(restoreDelayMilliseconds) }
        return UserActivity(
            activityType: Self.activityType,
            title: scene.title,
            targetContentIdentifier: noteID,
            userInfo: info,
            // The note's tags and its first words: what the system's search finds it by.
            keywords: tags + text.split(whereSeparator: { $0.isWhitespace }).prefix(8).map(String.init),
            isEligibleForSearch: searchable,
            interactionState: Data("{\"cursor\":\(cursor)}".utf8),
            persistentIdentifier: scene.session.id.description)
    }

    private func publish(_ scene: Scene) {
        scene.userActivity = currentActivity(scene)
        scene.setNeedsDisplay()
    }

    /// The window shows the note's text with its cursor.
    func draw(_ scene: Scene, in context: DrawingContext) {
        context.text(text, cursor: cursor)
    }

    /// Writes `count` framed post requests to fd 3 (non-blocking: waits for room with poll);
    /// returns how many were written whole.
    nonisolated private static func flood(count: Int, activating target: String?) -> Int {
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

    static func decodeCursor(_ data: Data) -> Int? {
        struct State: Decodable { var cursor: Int }
        return (try? JSONDecoder().decode(State.self, from: data))?.cursor
    }

    // MARK: - Keyboard commands (the scene's link of the responder chain)

    func canPerform(_ command: Command, in scene: Scene) -> Bool {
        switch command.id {
        case "notes.uppercase": !text.isEmpty  // nothing to uppercase: not shown, not performed
        case "notes.insertDate", "notes.toggleToolbar", "notes.pin", "notes.addBookmark", "notes.dumpState", "edit.copy", "edit.selectAll": true
        case "notes.openRecent": bookmarks > 0
        default: false
        }
    }

    func validate(_ command: inout CommandValidation, in scene: Scene) {
        if command.id == "notes.pin" {
            command.title = pinned ? "Unpin Note" : "Pin Note"
            command.state = pinned ? .on : .off
        }
    }

    func perform(_ command: Command, in scene: Scene) async -> ActionOutcome {
        record("command:\(command.id)")
        switch command.id {
        case "notes.uppercase":
            edit(scene) { text, _ in text = text.uppercased() }
            return .performed(.string(text))
        case "notes.insertDate":
            let date = ISO8601DateFormatter().string(from: Date()).prefix(10)
            edit(scene) { text, cursor in
                text.insert(contentsOf: date, at: text.index(text.startIndex, offsetBy: min(cursor, text.count)))
                cursor += date.count
            }
            return .performed(.string(text))
        case "notes.toggleToolbar":
            return await toggleToolbar(scene)
        case "notes.pin":
            pinned.toggle()
            return .performed(.bool(pinned))
        case "notes.addBookmark":
            bookmarks += 1
            return .performed(.integer(Int64(bookmarks)))
        case "notes.openRecent":
            return .performed(.integer(Int64(bookmarks)))
        case "notes.dumpState":
            return .performed(stateValue(scene))
        case "edit.copy":
            return .performed(.string(text))
        case "edit.selectAll":
            cursor = text.count
            return .performed(.integer(Int64(cursor)))
        default:
            return .declined("notes does not perform \(command.id)")
        }
    }

    func updateRefused(_ scene: Scene, error: BrokerError) {
        refusedUpdates.append("\(error.code)")
    }

    /// One-way data flow: whichever window typed, every window on the note shows the text.
    func didReceive(_ scene: Scene, update: UpdateEvent) {
        updatesReceived += 1
        remember(update.sequence)
        guard update.name == "noteChanged", update.payload["noteID"]?.stringValue == noteID,
              update.postedBy != scene.session.id, let newText = update.payload["text"]?.stringValue else { return }
        let newRevision = update.payload["revision"]?.integerValue ?? revision + 1
        guard newRevision > revision else { return }  // this window already has newer text
        text = newText
        revision = newRevision
        cursor = min(cursor, text.count)
        publish(scene)
    }

    func defaultsDidChange(_ scene: Scene, key: String, value: PlistValue?) {
        remember(scene.lastUpdateSequence)
    }

    /// This window fell behind: the note is read back from the model.
    func updatesDropped(_ scene: Scene, from: UInt64, to: UInt64) {
        droppedUpdates.append((from, to))
        remember(to)
        let before = revision
        catchUp()
        if revision != before { publish(scene) }
    }

    private func remember(_ sequence: UInt64) {
        guard sequence != sequences.last else { return }  // a notice and the defaults it carried
        sequences.append(sequence)
        if sequences.count > 512 { sequences.removeFirst(sequences.count - 512) }
    }

    /// requestSceneSessionRefresh reached this note: its title follows the note's first line.
    func refresh(_ scene: Scene) {
        record("refresh")
        if let first = text.split(separator: "\n", omittingEmptySubsequences: true).first {
            scene.title = String(first.prefix(80))
        }
    }

    func perform(_ scene: Scene, action: SceneAction) async -> ActionOutcome {
        switch action.name {
        case "open-in-window":
            // "Open in new window" from a context menu: another note, through the SDK.
            guard let note = action["noteID"]?.stringValue, !note.isEmpty else { return .declined("open-in-window needs noteID=...") }
            let presentation = action["presentation"]?.stringValue.flatMap(Presentation.init(rawValue:)) ?? .standard
            let activity = UserActivity(
                activityType: action["activityType"]?.stringValue ?? Self.activityType, title: note,
                targetContentIdentifier: note, userInfo: ["noteID": .string(note)])
            if let delay = action["delayMs"]?.integerValue, delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
            return await request {
                let outcome = try await scene.requestActivation(activity: activity, options: .init(presentation: presentation))
                return .dictionary([
                    "session": .string(outcome.session.description), "created": .bool(outcome.created),
                    "presentation": .string(outcome.presentation.rawValue), "state": .string(outcome.state.rawValue),
                ])
            }
        case "retitle":
            // A flood of title changes (each one a scene update the broker must absorb).
            let count = max(1, min(100_000, Int(action["count"]?.integerValue ?? 1)))
            for i in 0..<count { scene.title = "title \(i)" }
            return .performed(.integer(Int64(count)))
        case "set-activity-type":
            // Publishes a current activity of another type (refused unless the app declares it).
            guard let type = action["type"]?.stringValue else { return .declined("set-activity-type needs type=...") }
            scene.userActivity = UserActivity(activityType: type, title: noteID, userInfo: ["noteID": .string(noteID)])
            return .performed(.string(type))
        case "open-other-app":
            // A scene may only open scenes of its own app: this shows the refusal.
            guard let other = action["app"]?.stringValue else { return .declined("open-other-app needs app=...") }
            return await request {
                let outcome = try await scene.requestActivation(app: other)
                return .string(outcome.session.description)
            }
        case "activate-session":
            guard let session = action["session"]?.stringValue.flatMap(SessionID.init) else { return .declined("activate-session needs session=ID") }
            return await request {
                let outcome = try await scene.requestActivation(session: session)
                return .dictionary(["session": .string(outcome.session.description), "presentation": .string(outcome.presentation.rawValue)])
            }
        case "dismiss":
            // The Done button: this scene asks for its own destruction. It does not wait: the
            // answer comes after this process has been told to disconnect.
            let id = scene.session.id
            Task { try? await scene.requestDestruction(session: id) }
            return .performed(.string(id.description))
        case "close-session":
            guard let session = action["session"]?.stringValue.flatMap(SessionID.init) else { return .declined("close-session needs session=ID") }
            return await request {
                try await scene.requestDestruction(session: session, dismissal: .commit)
                return .string(session.description)
            }
        case "refresh":
            guard let session = action["session"]?.stringValue.flatMap(SessionID.init) else { return .declined("refresh needs session=ID") }
            return await request {
                try await scene.requestRefresh(session: session)
                return .string(session.description)
            }
        case "type":
            guard let inserted = action["text"]?.stringValue else { return .declined("type needs text=...") }
            await insert(inserted, in: scene)
            return .performed(stateValue(scene))
        case "toggle-toolbar":
            return await toggleToolbar(scene)
        case "set-default":
            // Any shared default, as JSON (a refusal shows the broker's code).
            guard let key = action["key"]?.stringValue, let json = action["json"]?.stringValue else {
                return .declined("set-default needs key=K json=VALUE")
            }
            return await request {
                let value = try PlistValue.parse(json: json)
                try await scene.defaults.set(value, forKey: key)
                return value
            }
        case "post":
            // An update event of any name, e.g. to measure fan-out or try the limits.
            guard let name = action["name"]?.stringValue else { return .declined("post needs name=N") }
            let size = Int(action["bytes"]?.integerValue ?? 0)
            let payload: [String: PlistValue] = size > 0 ? ["blob": .string(String(repeating: "x", count: size))] : [:]
            return await request { .integer(Int64(try await scene.post(UpdateEvent(name: name, payload: payload)))) }
        case "scroll":
            // Kept in scene storage: this window's own, back after reclaim, a crash or a restart.
            guard let offset = action["offset"]?.integerValue else { return .declined("scroll needs offset=N") }
            scene.storage["scrollOffset"] = .integer(offset)
            return .performed(stateValue(scene))
        case "store":
            // Any scene-storage value (a string); an empty value removes the key.
            guard let key = action["key"]?.stringValue, let value = action["value"]?.stringValue else {
                return .declined("store needs key=K value=V")
            }
            scene.storage[key] = value.isEmpty ? nil : .string(value)
            return .performed(stateValue(scene))
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
        case "add-command":
            // Inserts a command into the app's menu at runtime; a collision is declined with the broker's reason.
            guard let id = action["id"]?.stringValue, let menu = action["menu"]?.stringValue else {
                return .declined("add-command needs id=... menu=... [shortcut=...] [after=ID]")
            }
            let item = MenuItem.command(id: id, title: action["title"]?.stringValue ?? id, shortcut: action["shortcut"]?.stringValue)
            return await request {
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
            return await request {
                try await scene.changeMenu { $0.remove(id) }
                return .string(id)
            }
        case "print":
            // Writes a line to stdout (with print, as an app would) and one to stderr: the broker
            // logs both under this session.
            let text = action["text"]?.stringValue ?? "hello"
            print("stdout: \(text)")
            FileHandle.standardError.write(Data("stderr: \(text)\n".utf8))
            return .performed(.string(text))
        case "focus":
            // Moves the keyboard focus to an element (`list/row3`); an empty path focuses the scene.
            let path = (action["path"]?.stringValue ?? "").split(separator: "/").map(String.init)
            scene.focusPath = path
            if path.first == "list", path.count == 2 {
                scene.setCommandResponder(RowResponder(name: path[1]), forElement: path)
            }
            return .performed(.string(path.joined(separator: "/")))
        case "set-text":
            // Replaces the whole text (an edit that removes words).
            guard let newText = action["text"]?.stringValue else { return .declined("set-text needs text=...") }
            edit(scene) { text, _ in text = newText }
            return .performed(stateValue(scene))
        case "tag":
            // A tag goes into the activity's keywords only (as #tag).
            guard let tag = action["tag"]?.stringValue, !tag.isEmpty else { return .declined("tag needs tag=...") }
            tags.append("#" + tag)
            publish(scene)
            return .performed(.list(tags.map { .string($0) }))
        case "searchable":
            // Whether the note's activity is marked eligibleForSearch.
            guard let value = action["value"]?.stringValue, let flag = Bool(value) else { return .declined("searchable needs value=true|false") }
            searchable = flag
            publish(scene)
            return .performed(.bool(flag))
        case "move-cursor":
            guard let position = action["position"]?.integerValue else { return .declined("move-cursor needs position=N") }
            cursor = Int(max(0, min(Int64(text.count), position)))
            publish(scene)
            return .performed(stateValue(scene))
        case "state":
            return .performed(stateValue(scene))
        case "set-restore-delay":
            guard let ms = action["ms"]?.integerValue else { return .declined("set-restore-delay needs ms=N") }
            restoreDelayMilliseconds = ms
            return .performed(.integer(ms))
        case "hang-on-save":
            hangOnSave = true
            return .performed(.bool(true))
        case "set-save-delay":
            guard let ms = action["ms"]?.integerValue, ms >= 0 else { return .declined("set-save-delay needs ms=N") }
            saveDelayMilliseconds = Int(ms)
            return .performed(.integer(ms))
        case "close-socket":
            // A process that loses its connection and runs on: the broker must stop and reap it.
            shutdown(3, Int32(SHUT_RDWR))
            sleep(3600)  // blocks the main thread on purpose: nothing answers any more
            return .performed(nil)
        case "allocate":
            guard let megabytes = action["megabytes"]?.integerValue, megabytes > 0, megabytes <= 4096 else {
                return .declined("allocate needs megabytes=N (1...4096)")
            }
            ballast += Self.touchedMegabytes(Int(megabytes))
            return .performed(.integer(Int64(ballast.count) << 20))
        case "fill-cache":
            guard let megabytes = action["megabytes"]?.integerValue, megabytes > 0, megabytes <= 4096 else {
                return .declined("fill-cache needs megabytes=N (1...4096)")
            }
            cache += Self.touchedMegabytes(Int(megabytes))
            return .performed(.integer(Int64(cache.count) << 20))
        case "open-files":
            // What this process holds open: the broker must not have leaked anything but fd 3.
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            let targets = fds.compactMap { fd in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)).map { "\(fd) -> \($0)" }
            }
            return .performed(.list(targets.sorted().map { .string($0) }))
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
            // Test hook: a scene that misbehaves. `count` post requests written straight to the
            // broker's socket, none of them waited for (the SDK never does this: it keeps one
            // request in flight). With `session`, activations of that session instead (slow
            // when it restores slowly). The broker must stay bounded and answer the excess with
            // resourceExhausted; this process ignores the answers.
            let count = max(1, min(1_000_000, Int(action["count"]?.integerValue ?? 1000)))
            let target = action["session"]?.stringValue
            Thread.detachNewThread { _ = Self.flood(count: count, activating: target) }  // this answer goes out meanwhile
            return .performed(.integer(Int64(count)))
        case "exit":
            // Ends the process on its own with this status (0: a clean exit, not a crash).
            exit(Int32(truncatingIfNeeded: action["code"]?.integerValue ?? 0))
        case "crash":
            // A real fault (not a signal sent by kill, which a crash handler could survive).
            UnsafeMutablePointer<Int>(bitPattern: 0x10)!.pointee = 1
            return .performed(nil)
        default:
            return .declined("unknown action '\(action.name)'; `wmctl actions \(scene.session.id)` lists the actions notes declares")
        }
    }

    /// Runs a request of the scene's own; a refusal is declined with the broker's code first.
    /// The shared default every window follows; written from one window (the action or the
    /// ctrl+shift+t command), and the writer hears it too, in the app's order.
    private func toggleToolbar(_ scene: Scene) async -> ActionOutcome {
        let hidden = !(scene.defaults["toolbarHidden"]?.boolValue ?? false)
        return await request {
            try await scene.defaults.set(.bool(hidden), forKey: "toolbarHidden")
            return .bool(hidden)
        }
    }

    private func request(_ body: () async throws -> PlistValue) async -> ActionOutcome {
        do {
            return .performed(try await body())
        } catch let error as BrokerError {
            return .declined("\(error.code): \(error.message)")
        } catch {
            return .declined("\(error)")
        }
    }

    private func stateValue(_ scene: Scene) -> PlistValue {
        .dictionary([
            "noteID": .string(noteID),
            "text": .string(text),
            "revision": .integer(revision),
            "cursor": .integer(Int64(cursor)),
            "callbacks": .list(app.callbacks.map { .string($0) }),
            "discarded": .list(app.discardedSessions.map { .string($0) }),
            "continued": .list(continued.map { .string($0) }),
            "pid": .integer(Int64(getpid())),
            "state": .string(scene.state.rawValue),
            "configurationQuestions": .integer(Int64(app.configurationQuestions)),
            "refusedUpdates": .list(refusedUpdates.map { .string($0) }),
            "configuration": .string(scene.session.configuration),
            "delegateName": .string(scene.session.delegateName),
            "pinned": .bool(pinned),
            "focusPath": .string(scene.focusPath.joined(separator: "/")),
            "updates": .integer(Int64(updatesReceived)),
            "lastSequence": .integer(Int64(scene.lastUpdateSequence)),
            "sequences": .list(sequences.map { .integer(Int64($0)) }),
            "droppedUpdates": .list(droppedUpdates.map { .list([.integer(Int64($0.0)), .integer(Int64($0.1))]) }),
            "toolbarHidden": .bool(toolbarHidden),
            "toolbarHiddenAtConnect": .bool(toolbarHiddenAtConnect),
            "toolbarChanges": .integer(Int64(toolbarChanges)),
            "scrollOffset": scene.storage["scrollOffset"] ?? .null,
            "storage": .dictionary(scene.storage.all),
            "isKey": .bool(scene.isKey),
            "isProminent": .bool(scene.isProminent),
            "keyChanges": .list(keyChanges.map { .string($0) }),
            "sizes": .list(sizes.map { .string($0) }),
            "drags": .list(drags.map { .string($0) }),
            "drops": .list(drops.map { .string($0) }),
        ])
    }
}
