import Synchronization

/// Opens once, for good; whoever waits for it goes on then. An open lets the focus changes it
/// decided for other scenes wait until its own scene is active: the scene the user asked for
/// gets the CPU and the store's writer first, and a window is not pushed out before the one
/// replacing it is there.
final class Latch: Sendable {
    private let state = Mutex<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            guard !state.isOpen else { return [CheckedContinuation<Void, Never>]() }
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func opened() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }
}
