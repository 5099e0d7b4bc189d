#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// `wmctl show` for people: one session as labelled lines in human units (sizes, local times
/// with how long ago, the interaction state decoded), then its activities and storage.
/// `--json` prints the same facts raw (bytes, ISO times, base64).
enum SessionDetail {
    static func render(_ info: Windowbroker_V1_SessionInfo, now: Double = Date().timeIntervalSince1970) -> String {
        var lines = [info.title.isEmpty ? "(untitled)" : info.title.escapingControlCharacters]
        func field(_ label: String, _ value: String) {
            // Continuation lines of a multi-line value line up under its first line; any other
            // control character (an escape sequence, a carriage return) is shown as an escape.
            let indent = String(repeating: " ", count: 17)
            let body = value.split(separator: "\n", omittingEmptySubsequences: false)
                .map { String($0).escapingControlCharacters }.joined(separator: "\n" + indent)
            lines.append("  " + Output.pad(label, toWidth: 15) + body)
        }
        field("id", info.id)
        field("app", "\(info.appID) (configuration \(info.configuration.isEmpty ? "-" : info.configuration))")
        var state = Output.stateName(info.state) + (info.key ? " (the key scene: keyboard focus)" : "")
        if info.pid != 0 { state += ", pid \(info.pid), PSS " + (info.pssBytes == 0 ? "not read yet" : Output.size(info.pssBytes)) }
        field("state", state)
        field("created", "\(localTime(info.createdAt)) (\(Output.ago(info.createdAt, now: now)))")
        field("last active", "\(localTime(info.lastActiveAt)) (\(Output.ago(info.lastActiveAt, now: now)))")
        field("launches", "\(info.launchCount)" + (info.lastDisconnect.isEmpty ? "" : ", last disconnect: \(info.lastDisconnect)"))
        field("presentation", (info.presentation == .prominent ? "prominent" : "standard")
            + (info.requestedBy.isEmpty ? "" : ", requested by \(info.requestedBy.prefix(8))"))
        if info.crashLoopRetryAfterSeconds > 0 {
            field("crash loop", "launches refused for \(Output.duration(info.crashLoopRetryAfterSeconds)) more")
        }
        field("restoration", info.restorationSaved ? "saved" : "none saved")
        field("snapshot", info.snapshotKept ? "kept (`wmctl show \(info.id.prefix(8)) --snapshot FILE.png` writes it)" : "none")

        func activity(_ heading: String, _ wire: Windowbroker_V1_UserActivity, present: Bool) {
            guard present else { return }
            lines.append("")
            lines.append(heading)
            guard let activity = try? UserActivity(wire: wire, maxBytes: .max) else {
                field("(unreadable)", "the activity does not decode")
                return
            }
            field("type", activity.activityType)
            field("title", activity.title.isEmpty ? "-" : activity.title)
            field("target", activity.targetContentIdentifier ?? "-")
            field("userInfo", entries(activity.userInfo))
            field("keywords", activity.keywords.isEmpty ? "-" : activity.keywords.joined(separator: ", "))
            field("searchable", activity.isEligibleForSearch ? "yes" : "no")
            field("interaction", activity.interactionState.map(interactionState) ?? "-")
        }
        activity("Restoration activity", info.restorationActivity, present: info.hasRestorationActivity)
        activity("Current activity", info.currentActivity, present: info.hasCurrentActivity)
        activity("Quarantined restoration (failed twice; `wmctl activate --retry-restore` tries again)",
                 info.quarantinedRestoration, present: info.hasQuarantinedRestoration)
        if let storage = try? PlistValue.dictionary(wire: info.storage, path: "storage"), !storage.isEmpty {
            lines.append("")
            lines.append("Scene storage")
            lines.append("  " + entries(storage).split(separator: "\n", omittingEmptySubsequences: false)
                .map { String($0).escapingControlCharacters }.joined(separator: "\n  "))
        }
        return lines.joined(separator: "\n")
    }

    /// `key = value` lines, keys sorted; "-" when empty.
    static func entries(_ dictionary: [String: PlistValue]) -> String {
        guard !dictionary.isEmpty else { return "-" }
        return dictionary.keys.sorted().map { "\($0) = \(value(dictionary[$0]!))" }.joined(separator: "\n")
    }

    /// One value as people read it: sizes for data, local times for dates, JSON otherwise.
    static func value(_ value: PlistValue) -> String {
        switch value {
        case .data(let data): "<\(Output.size(UInt64(data.count)))>"
        case .date(let date): localTime(date.timeIntervalSince1970)
        case .url(let url): url
        default: Output.describe(value)
        }
    }

    /// The scene's opaque interaction state, decoded when it is JSON, a property list or
    /// text (what apps put there); otherwise its size and first bytes.
    static func interactionState(_ data: Data) -> String {
        if let json = try? JSONDecoder().decode(PlistValue.self, from: data) {
            return Output.describe(json) + " (JSON, \(Output.size(UInt64(data.count))))"
        }
        if data.starts(with: Array("bplist".utf8)) || data.starts(with: Array("<?xml".utf8)),
           let plist = try? PropertyListDecoder().decode(PlistValue.self, from: data) {
            return Output.describe(plist) + " (property list, \(Output.size(UInt64(data.count))))"
        }
        if let text = String(data: data, encoding: .utf8), !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" }) {
            return "\"\(text)\" (text)"
        }
        let head = data.prefix(16).map { String(printf: "%02x", $0) }.joined(separator: " ")
        return "\(Output.size(UInt64(data.count))) of binary: \(head)" + (data.count > 16 ? " …" : "")
    }

    static func localTime(_ seconds: Double) -> String {
        Output.localTime(seconds)
    }
}
