import Glibc
import IPCWire

/// Who is at the other end of a door into the broker. A scene speaks as its scene on its fd 3;
/// a process that is a scene worker, or descends from one (a helper it started, a shell in a
/// terminal app), speaks as that scene on every other door too (the control socket, the
/// session bus): its own app's sessions only, with the scene's refusals. Told by the process
/// tree (`/proc/PID/stat`), which a process cannot leave: its parent chain ends at the scene.
enum ScenePeers {
    /// The session whose scene process is `pid` or an ancestor of it; nil for any other process.
    static func scene(of pid: pid_t, among scenes: [pid_t: SessionID]) -> SessionID? {
        var current = pid
        let broker = getpid()
        // Bounded: a parent chain this deep is not one a process tree has.
        for _ in 0..<256 {
            if let scene = scenes[current] { return scene }
            guard current > 1, current != broker, let parent = parent(of: current) else { return nil }
            current = parent
        }
        return nil
    }

    /// The parent of `pid`: the field after the state, after the last ')' (a command's name may
    /// hold spaces and parentheses).
    static func parent(of pid: pid_t) -> pid_t? {
        guard let stat = ProcFile.read("/proc/\(pid)/stat", upTo: 1024), let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "), maxSplits: 3)
        guard fields.count >= 2 else { return nil }
        return pid_t(String(decoding: fields[1], as: UTF8.self))
    }
}

extension Broker {
    /// The scene a connection's peer speaks as (`ScenePeers`); nil for the user's own programs.
    func scene(speakingFor pid: pid_t) async -> SessionID? {
        guard pid > 0 else { return nil }
        let scenes = Dictionary(drivers.compactMap { id, driver in driver.worker.map { ($0.pid, id) } }, uniquingKeysWith: { first, _ in first })
        guard !scenes.isEmpty else { return nil }
        // Read off the broker's executor: a few small /proc files, one per ancestor. Here only
        // when the thread pool is gone (the process is ending).
        do {
            return try await OffLoop.run { ScenePeers.scene(of: pid, among: scenes) }
        } catch {
            return ScenePeers.scene(of: pid, among: scenes)
        }
    }
}
