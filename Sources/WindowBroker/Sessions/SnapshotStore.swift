import Foundation
import IPCWire

/// Pictures of the sessions' windows, one PNG file per session in the state directory's
/// `snapshots/` (private to the user, like the rest of the state), and beside it the thumbnail
/// the scene drew with it (`ID.thumbnail.png`, a switcher card's size). A scene renders its
/// window when it goes to the background and hands the picture over with its restoration
/// activity; the switcher shows the thumbnail. Only the newest is kept; a discard deletes both
/// with the session's other data. A missing or lost picture costs nothing but the picture: the
/// restoration activity is what brings the scene back.
struct SnapshotStore: Sendable {
    let directory: String
    /// A picture is at most this large (a 1280x720 window of text is some 30 KiB).
    static let maxBytes = 768 * 1024
    /// A thumbnail is at most this large, and at most `maxThumbnailSide` pixels a side (ours
    /// fit 244 x 154 and are some 5 KiB).
    static let maxThumbnailBytes = 64 * 1024
    static let maxThumbnailSide = 256

    /// What the broker knows of a kept picture.
    struct Info: Sendable, Equatable {
        var savedAt: Date
        var width: Int
        var height: Int
        var bytes: Int
        /// A hash of the whole picture and its thumbnail (this run only; 0: not known), so the
        /// same picture handed over again (a reclaim right after a background) is not written
        /// again.
        var digest = 0
        /// The thumbnail kept beside it (its width, height and bytes), if any.
        var thumbnail: Thumbnail?
    }

    struct Thumbnail: Sendable, Equatable {
        var width: Int
        var height: Int
        var bytes: Int
    }

    static func digest(_ png: Data, thumbnail: Data?) -> Int {
        var hasher = Hasher()
        png.withUnsafeBytes { hasher.combine(bytes: $0) }
        thumbnail?.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    init(stateDirectory: String) {
        directory = stateDirectory + "/snapshots"
    }

    func path(_ id: SessionID) -> String { directory + "/\(id).png" }
    func thumbnailPath(_ id: SessionID) -> String { directory + "/\(id)\(Self.thumbnailSuffix)" }
    private static let thumbnailSuffix = ".thumbnail.png"

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
        guard (1...maxSide).contains(width), (1...maxSide).contains(height), width * height <= maxPixels else {
            throw BrokerError(.invalidRequest, "the snapshot's size \(width)x\(height) is not a window's (at most \(maxSide) a side and \(maxPixels) pixels, an 8K screen)")
        }
        return Info(savedAt: Date(), width: width, height: height, bytes: png.count)
    }

    /// A picture's sides and pixels at most: what a window on an 8K screen can be. A PNG
    /// declaring more (a few KiB can declare 16384 x 16384) would cost whoever decodes it
    /// gigabytes and seconds.
    static let maxSide = 8192
    static let maxPixels = 7680 * 4320

    /// The switcher decodes thumbnails, or a picture no larger than one: a larger picture
    /// comes with its thumbnail.
    static func checkCardPicture(_ info: Info) throws(BrokerError) {
        guard info.thumbnail != nil || (info.width <= maxThumbnailSide && info.height <= maxThumbnailSide) else {
            throw BrokerError(.invalidRequest, "the snapshot is \(info.width)x\(info.height) and came without a thumbnail (at most \(maxThumbnailSide) a side); the switcher would decode the whole picture for a card")
        }
    }

    /// A thumbnail a scene sent with its picture, checked as a picture is, and small.
    static func validatedThumbnail(_ png: Data) throws(BrokerError) -> Thumbnail {
        guard png.count <= maxThumbnailBytes else {
            throw BrokerError(.payloadTooLarge, "the snapshot's thumbnail is \(png.count) bytes (limit \(maxThumbnailBytes))")
        }
        let info = try validated(png)
        guard info.width <= maxThumbnailSide, info.height <= maxThumbnailSide else {
            throw BrokerError(.invalidRequest, "the snapshot's thumbnail is \(info.width)x\(info.height) (at most \(maxThumbnailSide) a side)")
        }
        return Thumbnail(width: info.width, height: info.height, bytes: png.count)
    }

    /// Writes the picture and its thumbnail atomically (a reader never sees half of either);
    /// without a thumbnail, one kept for an earlier picture is deleted.
    func save(_ png: Data, thumbnail: Data?, for id: SessionID) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try png.write(to: URL(fileURLWithPath: path(id)), options: .atomic)
        if let thumbnail {
            try thumbnail.write(to: URL(fileURLWithPath: thumbnailPath(id)), options: .atomic)
        } else {
            try? FileManager.default.removeItem(atPath: thumbnailPath(id))
        }
    }

    /// A kept picture, read no further than a picture may be: a file put in its place that is
    /// larger is an error, never read whole.
    func load(_ id: SessionID, thumbnail: Bool = false) throws(BrokerError) -> Data {
        try BoundedFile.read(thumbnail ? thumbnailPath(id) : path(id), limit: thumbnail ? Self.maxThumbnailBytes : Self.maxBytes,
                             what: thumbnail ? "the thumbnail" : "the snapshot", followLinks: false)
    }

    func delete(_ id: SessionID) {
        try? FileManager.default.removeItem(atPath: path(id))
        try? FileManager.default.removeItem(atPath: thumbnailPath(id))
    }

    /// The pictures kept, for the sessions that exist; those of sessions that do not (a
    /// discard cut short by a crash) are deleted.
    func reconcile(with sessions: Set<SessionID>) -> [SessionID: Info] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var kept: [SessionID: Info] = [:]
        for name in names where name.hasSuffix(".png") && !name.hasSuffix(Self.thumbnailSuffix) {
            guard let id = SessionID(String(name.dropLast(4))), sessions.contains(id) else {
                try? FileManager.default.removeItem(atPath: directory + "/" + name)
                continue
            }
            guard let file = Self.stored(path(id)), var info = try? Self.validated(file.header) else { continue }
            info.savedAt = file.modified ?? info.savedAt
            info.bytes = file.bytes ?? info.bytes
            kept[id] = info
        }
        // A thumbnail is kept with its picture; one without a picture (or that is not one) goes.
        for name in names where name.hasSuffix(Self.thumbnailSuffix) {
            let path = directory + "/" + name
            guard let id = SessionID(String(name.dropLast(Self.thumbnailSuffix.count))), kept[id] != nil,
                  let file = Self.stored(path), var thumbnail = try? Self.validatedThumbnail(file.header) else {
                try? FileManager.default.removeItem(atPath: path)
                continue
            }
            thumbnail.bytes = file.bytes ?? thumbnail.bytes
            kept[id]?.thumbnail = thumbnail
        }
        return kept
    }

    /// A kept file's header (what it is: the rest is read when someone asks for it), size and
    /// time; nil when it cannot be opened.
    private static func stored(_ path: String) -> (header: Data, bytes: Int?, modified: Date?)? {
        guard let file = FileHandle(forReadingAtPath: path) else { return nil }
        let header = (try? file.read(upToCount: 24)) ?? Data()
        try? file.close()
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        return (header, (attributes?[.size] as? NSNumber)?.intValue, attributes?[.modificationDate] as? Date)
    }
}

/// The newest picture of a session's window, as kept (`SnapshotStore`).
public struct Snapshot: Sendable {
    public var session: SessionID
    /// The picture, PNG.
    public var png: Data
    public var savedAt: Date
    /// The size of `png`.
    public var width: Int
    public var height: Int
    /// `png` is the thumbnail the scene drew with its picture (asked for, and kept).
    public var isThumbnail = false
}
