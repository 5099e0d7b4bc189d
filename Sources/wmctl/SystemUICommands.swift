import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// `wmctl switcher` and `wmctl overlay`: the broker shows them on the compositor.
struct Switcher: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switcher",
        abstract: "Show the switcher on the display: every session as a picture of its window (with --app: Show All Windows of one app).",
        discussion: """
            The broker starts it on its compositor and answers once it is on screen. In it: arrows or Tab \
            choose, Return or a click brings the session back (restored, if it was reclaimed), Delete or \
            dragging a card up closes the session, Escape leaves. Bind it to a key in your compositor, e.g. \
            for sway: bindsym Mod4+Tab exec wmctl switcher
            """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "Only this app's windows, and a card that opens a new one.", completion: LiveCompletion.apps) var app: String?
    @Flag(help: "Hide the switcher or overlay shown instead.") var hide = false

    func run() async throws {
        let request = Windowbroker_V1_SystemUIRequest.with {
            $0.surface = .switcher
            $0.appID = app ?? ""
            $0.hide = hide
        }
        try await SystemUIOutput.show(request, global: global, noun: ("card", "cards"), name: app.map { "Show All Windows of \($0)" } ?? "the switcher")
    }
}

struct Overlay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "overlay",
        abstract: "Show the command overlay: a scene's keyboard commands with their shortcuts, grouped by menu.",
        discussion: """
            What holding the command key over a scene shows. It stays until `wmctl overlay --hide` (or the \
            key is released); a click on a command performs it.
            """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "Whose commands (default: the key scene's).", completion: LiveCompletion.sessions) var session: String?
    @Flag(help: "Hide the overlay or switcher shown instead.") var hide = false

    func run() async throws {
        let request = Windowbroker_V1_SystemUIRequest.with {
            $0.surface = .commandOverlay
            $0.sessionID = session ?? ""
            $0.hide = hide
        }
        try await SystemUIOutput.show(request, global: global, noun: ("command", "commands"), name: "the command overlay")
    }
}

enum SystemUIOutput {
    static func show(_ request: Windowbroker_V1_SystemUIRequest, global: GlobalOptions, noun: (String, String), name: String) async throws {
        try await global.withBroker { client in
            guard case .systemUi(let reply) = try await client.request(.systemUi(request)) else { throw BrokerError.unexpectedReply }
            if request.hide {
                global.emit(.dictionary(["hidden": .bool(reply.hidden)])) { reply.hidden ? "hidden" : "nothing was shown" }
                return
            }
            let items: [PlistValue] = reply.items.map { item in
                var object: [String: PlistValue] = ["id": .string(item.id)]
                if item.width > 0 {
                    var frame: [String: PlistValue] = [:]
                    frame["x"] = .integer(Int64(item.x))
                    frame["y"] = .integer(Int64(item.y))
                    frame["width"] = .integer(Int64(item.width))
                    frame["height"] = .integer(Int64(item.height))
                    object["frame"] = .dictionary(frame)
                }
                return .dictionary(object)
            }
            let value = PlistValue.dictionary([
                "pid": .integer(Int64(reply.pid)),
                "width": .integer(Int64(reply.width)),
                "height": .integer(Int64(reply.height)),
                "firstFrameMs": .real(Double(reply.firstFrameMicros) / 1000),
                "items": .list(items),
            ])
            global.emit(value) {
                let count = reply.items.count
                return "\(name) is on screen (pid \(reply.pid)): \(count) \(count == 1 ? noun.0 : noun.1), first frame after \(String(printf: "%.1f", Double(reply.firstFrameMicros) / 1000)) ms"
            }
        }
    }
}
