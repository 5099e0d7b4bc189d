import CGtk
import CLinuxShim
import Glibc
import IPCWire

/// With a display, the process's main thread is GTK's: it runs GLib's main loop, and the main
/// actor's jobs run on it too (GLib watches Dispatch's main-queue eventfd and drains the queue
/// when it is signalled, as GTK apps on macOS drain it from the run loop). The broker socket
/// then has an event loop thread of its own. Headless, `MainThreadLoop` runs instead and GTK is
/// never initialised.
enum GtkMainLoop {
    /// Set once GTK is initialised on the main thread: windows can be made.
    @MainActor static private(set) var isRunning = false

    /// Initialises GTK on the calling thread (the process's main thread) and, when it could
    /// open the display, runs `body` on the main actor and GLib's loop forever. Returns at once,
    /// having started nothing, when the caller is not the main thread or GTK has no display.
    @MainActor
    static func runIfDisplayed(_ body: @escaping @MainActor () async -> Void) {
        guard ProcessFacts.hasDisplay, wb_is_main_thread() != 0 else { return }
        // The app id is the window's on Wayland (GTK takes the program's name when no
        // GApplication gives one): the compositor, the switcher and the tests match windows by it.
        if let app = ProcessFacts.environment("WINDOWBROKER_APP"), !app.isEmpty { g_set_prgname(app) }
        guard gtk_init_check() != 0 else {
            PlainOutput.write("scene worker: GTK could not open the display \(ProcessFacts.environment("WAYLAND_DISPLAY") ?? ""); running without windows\n", to: STDERR_FILENO)
            return
        }
        let mainQueue = wb_main_queue_eventfd()
        guard mainQueue >= 0 else { return }
        _ = g_unix_fd_add(mainQueue, G_IO_IN, { fd, _, _ in
            // Consumes the count (the eventfd is non-blocking), so that the next job signals again.
            var count: UInt64 = 0
            _ = read(fd, &count, MemoryLayout<UInt64>.size)
            wb_main_queue_drain()
            return gboolean(1)  // G_SOURCE_CONTINUE
        }, nil)
        isRunning = true
        // The socket and the runtime's other tasks on one event loop thread of their own.
        _ = WireRuntime.runTasksOnEventLoops(loops: 1)
        // Queued on the main queue, which signals the eventfd: the loop's first drain starts it.
        Task { @MainActor in await body() }
        let loop = g_main_loop_new(nil, 0)
        g_main_loop_run(loop)
        fatalError("GLib's main loop stopped")
    }

    /// Run once when the compositor hangs up, with the main actor's jobs still running after it.
    @MainActor private static var displayLost: (@MainActor () -> Void)?
    /// The compositor hung up. Nothing may wait for it from now on: a call that reads from the
    /// connection (a roundtrip, a first configure) would wait for ever for GDK's own reader,
    /// which never runs again.
    @MainActor private(set) static var displayIsGone = false

    /// GDK ends the process (`_exit(1)`) the moment it reads that the compositor hung up, with
    /// nothing saved. A watch on the same connection at a higher priority than GDK's sees the
    /// hang-up first: `onLost` runs, and from then on the main thread runs only the main actor's
    /// jobs (GDK's source is never dispatched again), so that the broker can save the scene and
    /// end it. Once per process.
    @MainActor
    static func watchDisplayLoss(_ onLost: @escaping @MainActor () -> Void) {
        guard isRunning, displayLost == nil, let display = gdk_display_get_default(), wb_display_is_wayland(display) != 0 else { return }
        displayLost = onLost
        let fd = wl_display_get_fd(gdk_wayland_display_get_wl_display(display))
        _ = g_unix_fd_add_full(G_PRIORITY_HIGH, fd, GIOCondition(rawValue: G_IO_HUP.rawValue | G_IO_ERR.rawValue), { _, _, _ in
            MainActor.assumeIsolated { GtkMainLoop.runWithoutDisplay() }
        }, nil, nil)
    }

    @MainActor
    private static func runWithoutDisplay() -> gboolean {  // never returns: the process ends in here
        PlainOutput.write("scene worker: the compositor went away (WAYLAND_DISPLAY \(ProcessFacts.environment("WAYLAND_DISPLAY") ?? "")); saving the scene for the broker\n", to: STDERR_FILENO)
        displayIsGone = true
        displayLost?()
        // The broker saves the scene and disconnects it, which ends the process; one that
        // does not within this long (a broker that is stuck) does not keep it.
        let mainQueue = wb_main_queue_eventfd()
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += 30
        while true {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let left = Int(deadline.tv_sec - now.tv_sec) * 1000 + Int(deadline.tv_nsec - now.tv_nsec) / 1_000_000
            guard left > 0 else {
                PlainOutput.write("scene worker: the broker did not end this scene after its compositor went away\n", to: STDERR_FILENO)
                _exit(1)
            }
            var ready = pollfd(fd: mainQueue, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(left)) > 0 else { continue }
            var count: UInt64 = 0
            _ = read(mainQueue, &count, MemoryLayout<UInt64>.size)
            wb_main_queue_drain()
        }
    }
}
