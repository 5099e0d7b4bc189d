import Foundation
import IPCWire
import Synchronization
import WindowBroker
import WindowBrokerTesting
import XCTest

/// The store's files deleted or replaced while the broker runs (issue 67, items 1 and 2). What
/// survives a crash is what is at the paths: each test copies the files found there into a
/// fresh directory, as a restart after kill -9 would find them, and opens a store on that.
/// Before the fix every acknowledged write after the deletion was missing from it (the store
/// wrote on into the unlinked file), and pictures went to whatever a swapped link named.
final class StoreFileTests: XCTestCase {
    private var root: String!

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("wb-store-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func session(_ title: String) -> SceneSession {
        SceneSession(appID: "notes", configuration: "Editor", role: "windowApplication", title: title)
    }

    /// The titles a store opened on copies of the files now at `directory`'s paths holds.
    private func titlesAfterACrash(of directory: String) async throws -> [String] {
        let copy = root + "/after-crash-\(UUID().uuidString.prefix(4))"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: directory + "/state.sqlite" + suffix) {
            try FileManager.default.copyItem(atPath: directory + "/state.sqlite" + suffix, toPath: copy + "/state.sqlite" + suffix)
        }
        let store = try SessionStore(directory: copy)
        return try await store.loadAll().sessions.map(\.title).sorted()
    }

    private func remove(_ paths: [String]) {
        for path in paths { XCTAssertEqual(unlink(path), 0, "removing \(path)") }
    }

    func testAStoreFileDeletedUnderTheBrokerIsPutBackBeforeTheNextWriteIsAcknowledged() async throws {
        let directory = root + "/state"
        let store = try SessionStore(directory: directory)
        try await store.insert(session("before"))
        remove([directory + "/state.sqlite"])
        try await store.insert(session("after"))
        XCTAssertEqual(store.restorationCount, 1)
        let titles = try await titlesAfterACrash(of: directory)
        XCTAssertEqual(titles, ["after", "before"])
        let live = try await store.loadAll().sessions.map(\.title).sorted()
        XCTAssertEqual(live, ["after", "before"], "the broker reads and writes the restored file")
    }

    func testTheStoreWithItsWALAndSharedMemoryDeletedComesBackWhole() async throws {
        let directory = root + "/state"
        let store = try SessionStore(directory: directory)
        try await store.insert(session("before"))
        remove(["", "-wal", "-shm"].map { directory + "/state.sqlite" + $0 })
        try await store.insert(session("after"))
        let titles = try await titlesAfterACrash(of: directory)
        XCTAssertEqual(titles, ["after", "before"])
    }

    /// The WAL holds the commits not yet copied into the database file: the file alone at its
    /// path would have lost "before" too.
    func testADeletedWALAloneIsPutBack() async throws {
        let directory = root + "/state"
        let store = try SessionStore(directory: directory)
        try await store.insert(session("before"))
        remove([directory + "/state.sqlite-wal"])
        try await store.insert(session("after"))
        XCTAssertEqual(store.restorationCount, 1)
        let titles = try await titlesAfterACrash(of: directory)
        XCTAssertEqual(titles, ["after", "before"])
    }

    /// A file put at the store's path (an old copy restored by hand) is kept aside, never
    /// overwritten, and the broker's own data goes back in its place.
    func testAReplacedStoreFileIsMovedAsideAndTheLiveDataPutBack() async throws {
        let directory = root + "/state"
        let other = root + "/other"
        do {
            let old = try SessionStore(directory: other)
            try await old.insert(session("someone else's"))
            await old.checkpoint()
        }
        let store = try SessionStore(directory: directory)
        try await store.insert(session("before"))
        XCTAssertEqual(rename(other + "/state.sqlite", directory + "/state.sqlite"), 0)
        try await store.insert(session("after"))
        let titles = try await titlesAfterACrash(of: directory)
        XCTAssertEqual(titles, ["after", "before"])
        let aside = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("state.sqlite.replaced-") }
        XCTAssertEqual(aside.count, 1, "\(aside)")
    }

    /// The whole directory deleted: made again, with a new lock that keeps a second broker out.
    func testADeletedStateDirectoryIsMadeAgainWithItsLock() async throws {
        let directory = root + "/state"
        let store = try SessionStore(directory: directory)
        try await store.insert(session("before"))
        try FileManager.default.removeItem(atPath: directory)
        try await store.insert(session("after"))
        let titles = try await titlesAfterACrash(of: directory)
        XCTAssertEqual(titles, ["after", "before"])
        XCTAssertThrowsError(try SessionStore(directory: directory), "the lock was taken again") { error in
            XCTAssertEqual((error as? BrokerError)?.code, .requestDenied)
        }
    }

    /// With nothing written, the idle writer notices within a second or so.
    func testADeletedStoreIsPutBackWhileNothingIsWritten() async throws {
        let directory = root + "/state"
        let store = try SessionStore(directory: directory)
        try await store.insert(session("only"))
        remove([directory + "/state.sqlite"])
        for _ in 0..<200 where store.restorationCount == 0 { try await Task.sleep(for: .milliseconds(50)) }
        XCTAssertEqual(store.restorationCount, 1)
        let titles = try await titlesAfterACrash(of: directory)
        XCTAssertEqual(titles, ["only"])
    }

    /// Item 2: the state directory given through a symbolic link that is swapped mid-run.
    /// Before: the store stayed where it was opened and the pictures followed the link.
    func testPicturesGoWhereTheStoreIsWhenALinkAboveTheStateDirectoryIsSwapped() async throws {
        let (first, second, link) = (root + "/first", root + "/second", root + "/link")
        for directory in [first, second] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        XCTAssertEqual(symlink(first, link), 0)
        let running = try await InProcessBroker.start(apps: [.init("alpha", activityTypes: ["alpha.edit"])]) {
            $0.stateDirectory = link + "/state"
        }
        do {
            let broker = running.broker
            let opened = try await broker.open(ActivationRequest(appID: "alpha", sessionID: nil, activity: nil, forceNew: true))
            XCTAssertEqual(unlink(link), 0)
            XCTAssertEqual(symlink(second, link), 0)
            try await backgroundWithAPicture(opened.sessionID, in: running)
            let picture = "/state/snapshots/\(opened.sessionID).png"
            XCTAssertTrue(FileManager.default.fileExists(atPath: first + picture), "beside the store")
            XCTAssertFalse(FileManager.default.fileExists(atPath: second + "/state"), "nothing written through the swapped link")
        }
        await running.stop()
    }

    /// The search index is derived: its files deleted mid-run cost nothing but a rebuild at the
    /// next start. Before: with the marker deleted as well, a crash left the next start
    /// trusting an index that missed every entry written after the deletion.
    func testASearchIndexWhoseFilesWereDeletedIsRebuiltAtTheNextStart() async throws {
        let directory = root + "/state"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let index = try SearchIndex(directory: directory)
        let session = SessionID()
        let told = Expectation()
        remove([directory + "/search.sqlite-running", directory + "/search.sqlite-wal"])
        index.index(UserActivity(activityType: "notes.edit", title: "after the deletion", isEligibleForSearch: true),
                    session: session, app: "notes") { _ in told.fulfil() }
        let hits = try await index.search("deletion", app: nil, limit: 5)
        XCTAssertEqual(hits.map(\.sessionID), [session], "searches go on from the open index")
        XCTAssertTrue(told.fulfilled, "the change is told")
        // A crash now: the next start finds the files at the paths, the marker among them, and rebuilds.
        let copy = root + "/after-crash"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in ["search.sqlite", "search.sqlite-wal", "search.sqlite-running"] where FileManager.default.fileExists(atPath: directory + "/" + name) {
            try FileManager.default.copyItem(atPath: directory + "/" + name, toPath: copy + "/" + name)
        }
        let next = try SearchIndex(directory: copy)
        XCTAssertEqual(next.rebuildReason, "unclean stop")
    }

    /// Item 3: a kept picture replaced by a huge (sparse) file. Before: `show --snapshot` read
    /// it whole (4.1 GiB of RSS for a 4 GiB file; here 1 GiB).
    func testAPictureReplacedByAHugeFileIsRefusedNotRead() async throws {
        let running = try await InProcessBroker.start(apps: [.init("alpha", activityTypes: ["alpha.edit"])]) {
            $0.stateDirectory = self.root + "/state"
        }
        do {
            let broker = running.broker
            let opened = try await broker.open(ActivationRequest(appID: "alpha", sessionID: nil, activity: nil, forceNew: true))
            try await backgroundWithAPicture(opened.sessionID, in: running)
            let picture = root + "/state/snapshots/\(opened.sessionID).png"
            XCTAssertEqual(truncate(picture, 1 << 30), 0)
            do {
                let snapshot = try await broker.snapshot(opened.sessionID)
                XCTFail("read \(snapshot.png.count) bytes")
            } catch let error as BrokerError {
                XCTAssertTrue(error.message.contains("at most"), error.message)
            }
        }
        await running.stop()
    }

    /// Item 4: a picture a few KiB long may declare 16384 x 16384 pixels. Before: the broker
    /// kept it (it checked the header only), and the switcher decoded six of them in 9.8 s.
    func testAPictureLargerThanAScreenOrWithoutItsThumbnailIsNotKept() async throws {
        let running = try await InProcessBroker.start(apps: [.init("alpha", activityTypes: ["alpha.edit"])]) {
            $0.stateDirectory = self.root + "/state"
            $0.maxForegroundScenes = 4
        }
        do {
            let broker = running.broker
            func kept(_ png: Data, thumbnail: Data = Data()) async throws -> Bool {
                let opened = try await broker.open(ActivationRequest(appID: "alpha", sessionID: nil, activity: nil, forceNew: true))
                try await backgroundWithAPicture(opened.sessionID, in: running, png: png, thumbnail: thumbnail)
                return (try? await broker.snapshot(opened.sessionID)) != nil
            }
            let bomb = try await kept(Self.pngHeader(width: 16384, height: 16384), thumbnail: Self.pngHeader(width: 244, height: 154))
            XCTAssertFalse(bomb, "more pixels than an 8K screen")
            let bare = try await kept(Self.pngHeader(width: 1280, height: 720))
            XCTAssertFalse(bare, "a window's picture without the thumbnail a card shows")
            let whole = try await kept(Self.pngHeader(width: 1280, height: 720), thumbnail: Self.pngHeader(width: 244, height: 137))
            XCTAssertTrue(whole, "a window's picture with its thumbnail")
        }
        await running.stop()
    }

    /// Sends the session to the background, its scene answering with a picture.
    private func backgroundWithAPicture(
        _ id: SessionID, in running: InProcessBroker, png: Data = pngHeader(width: 64, height: 48), thumbnail: Data = Data()
    ) async throws {
        var held = await running.workers.hold(app: "alpha") {
            if case .restorationActivityRequest = $0 { true } else { false }
        }.makeAsyncIterator()
        let broker = running.broker
        let background = Task { try await broker.background(id) }
        let request = try await XCTUnwrapAsync(await held.next())
        await request.answer(with: .restorationActivity(.with {
            $0.activity = .with { $0.activityType = "alpha.edit" }
            $0.snapshotPng = png
            $0.thumbnailPng = thumbnail
        }))
        _ = try await InProcessBroker.withDeadline(.seconds(10)) { try await background.value }
    }

    /// What the broker checks of a picture: the signature and the IHDR chunk's size.
    static func pngHeader(width: UInt32, height: UInt32) -> Data {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        bytes += Array("IHDR".utf8)
        for value in [width, height] { bytes += withUnsafeBytes(of: value.bigEndian, Array.init) }
        bytes += [8, 6, 0, 0, 0, 0, 0, 0, 0]
        return Data(bytes)
    }
}

/// The same through the real broker: the files deleted with `rm`, a write acknowledged by
/// `wmctl`, the broker killed with SIGKILL and started again.
final class StoreFileProcessTests: BrokerTestCase {
    func testAcknowledgedWritesAfterTheStoreWasDeletedSurviveKill9() throws {
        let before = try harness.openNote("store-deleted-before")
        for suffix in ["", "-wal", "-shm"] { unlink(harness.stateDirectory + "/state.sqlite" + suffix) }
        let after = try harness.openNote("store-deleted-after")
        try harness.type(after, "typed after rm")
        let pid = try harness.noteState(after).pid
        harness.stop(signal: SIGKILL)
        XCTAssertTrue(harness.brokerLog.contains("the session store's files changed under the broker"), "logged at error")
        try harness.eventually("the worker died with the broker") { !processExists(pid) }
        // The app's own files go too: what comes back can only come from the broker.
        try FileManager.default.removeItem(atPath: harness.notesDataDirectory)
        try harness.start()
        let sessions = try harness.jsonList("sessions").compactMap { $0["id"] as? String }
        XCTAssertTrue(sessions.contains(before), "\(sessions)")
        XCTAssertTrue(sessions.contains(after), "\(sessions)")
        _ = try harness.json("activate", after)
        XCTAssertEqual(try harness.noteState(after).text, "typed after rm")
    }
}

/// Whether something was told, across threads.
private final class Expectation: Sendable {
    private let flag = Mutex(false)
    var fulfilled: Bool { flag.withLock { $0 } }
    func fulfil() { flag.withLock { $0 = true } }
}
