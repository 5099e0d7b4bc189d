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
}
