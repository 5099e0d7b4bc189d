import Foundation
import IPCWire

/// Pictures of the sessions' windows, one PNG file per session in the state directory's
/// `snapshots/` (private to the user, like the rest of the state). A scene renders its window
/// when it goes to the background and hands the picture over with its restoration activity;
/// the switcher shows it. Only the newest is kept; a discard deletes it with the session's
/// other data. A missing or lost picture costs nothing but the picture: the restoration
/// activity is what brings the scene back.
struct SnapshotStore: Sendable {
    let directory: String
    /// A picture is at most this large (a 1280x720 window of text is some 30 KiB).
    static let maxBytes = 768 * 1024

    /// What the broker knows of a kept picture.
    struct Info: Sendable, Equatable {
        var savedAt: Date
        var width: Int
        var height: Int
        var bytes: Int
        /// A hash of the whole picture (this run only; 0: not known), so the same picture handed
        /// over again (a reclaim right after a background) is not written again.
        var digest = 0
    }

    static func digest(_ png: Data) -> Int {
        var hasher = Hasher()
        png.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    init(stateDirectory: String) {
        directory = stateDirectory + "/snapshots"
    }

    func path(_ id: SessionID) -> String { directory + "/\(id).png" }

    /// A picture a scene sent, checked: a PNG of a sane size, else a clear error and nothing kept.
    static func validated(_ png: Data) throws(BrokerError) -> Info {
        guard png.count <= maxBytes else {
            throw BrokerError(.payloadTooLarge, "the snapshot is \(png.count) bytes (limit \(maxBytes))")
        }
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let bytes = [UInt8](png.prefix(24))
        guard bytes.count == 24, Array(bytes[0..<8]) == signature, String(decoding: bytes[12..<16], as: UTF8.self) == "IHDR" else {
            throw BrokerError(.invalidRequest, "the snapshot is not a PNG image")
        }
        func be32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        let (width, height) = (be32(16), be32(20))
        guard (1...16384).contains(width), (1...16384).contains(height) else {
            throw BrokerError(.invalidRequest, "the snapshot's size \(width)x\(height) is not a window's")
        }
        return Info(savedAt: Date(), width: width, height: height, bytes: png.count)
    }

    /// Writes the picture atomically (a reader never sees half of it).
    func save(_ png: Data, for id: SessionID) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try png.write(to: URL(fileURLWithPath: path(id)), options: .atomic)
    }

    func load(_ id: SessionID) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path(id)))
    }

    func delete(_ id: SessionID) {
        try? FileManager.default.removeItem(atPath: path(id))
    }

    /// The pictures kept, for the sessions that exist; those of sessions that do not (a
    /// discard cut short by a crash) are deleted.
    func reconcile(with sessions: Set<SessionID>) -> [SessionID: Info] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var kept: [SessionID: Info] = [:]
        for name in names where name.hasSuffix(".png") {
            guard let id = SessionID(String(name.dropLast(4))), sessions.contains(id) else {
                try? FileManager.default.removeItem(atPath: directory + "/" + name)
                continue
            }
            // The header says what it is; the rest is read when someone asks for it.
            guard let file = FileHandle(forReadingAtPath: path(id)) else { continue }
            let header = (try? file.read(upToCount: 24)) ?? Data()
            try? file.close()
            guard var info = try? Self.validated(header) else { continue }
            let attributes = try? FileManager.default.attributesOfItem(atPath: path(id))
            info.savedAt = attributes?[.modificationDate] as? Date ?? info.savedAt
            info.bytes = (attributes?[.size] as? NSNumber)?.intValue ?? info.bytes
            kept[id] = info
        }
        return kept
    }
}

/// The newest picture of a session's window, as kept (`SnapshotStore`).
public struct Snapshot: Sendable {
    public var session: SessionID
    /// The picture, PNG.
    public var png: Data
    public var savedAt: Date
    public var width: Int
    public var height: Int
}
