import CGtk
import CSceneActivation
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire

/// The modifiers held with a key, as the command key hold and the shortcuts name them.
struct KeyModifiers: OptionSet, Sendable, Hashable {
    let rawValue: UInt32
    static let ctrl = KeyModifiers(rawValue: 1)
    static let alt = KeyModifiers(rawValue: 2)
    static let shift = KeyModifiers(rawValue: 4)
    static let `super` = KeyModifiers(rawValue: 8)

    init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The modifier a modifier key is (Super_L is `.super`); nil for every other key.
    init?(modifierKey keyval: guint) {
        switch Int32(keyval) {
        case GDK_KEY_Control_L, GDK_KEY_Control_R: self = .ctrl
        case GDK_KEY_Alt_L, GDK_KEY_Alt_R, GDK_KEY_Meta_L, GDK_KEY_Meta_R: self = .alt
        case GDK_KEY_Shift_L, GDK_KEY_Shift_R: self = .shift
        case GDK_KEY_Super_L, GDK_KEY_Super_R, GDK_KEY_Hyper_L, GDK_KEY_Hyper_R: self = .super
        default: return nil
        }
    }

    init(gdk state: GdkModifierType) {
        var held: KeyModifiers = []
        if state.rawValue & GDK_CONTROL_MASK.rawValue != 0 { held.insert(.ctrl) }
        if state.rawValue & GDK_ALT_MASK.rawValue != 0 { held.insert(.alt) }
        if state.rawValue & GDK_SHIFT_MASK.rawValue != 0 { held.insert(.shift) }
        if state.rawValue & GDK_SUPER_MASK.rawValue != 0 { held.insert(.super) }
        self = held
    }
}

/// What one shortcut of the window calls back: the window (not kept alive by it) and the
/// shortcut's name.
private final class ShortcutTarget {
    weak var window: SceneGtkWindow?
    let name: String

    init(window: SceneGtkWindow, name: String) {
        self.window = window
        self.name = name
    }
}

/// A picture of the scene's window as GTK renders its widget tree, PNG, and the same picture
/// fitted into a switcher card's box.
struct WindowSnapshot: Sendable, Equatable {
    var png: Data
    var thumbnailPNG: Data?

    /// The box a thumbnail is fitted into: a card's picture in the switcher.
    static let thumbnailBox = WindowSize(width: 244, height: 154)
}

/// The scene's GTK window: the SDK makes it before willConnect (the app fills it), shows it in
/// the foreground, hides it in the background, and turns its signals into the scene model's
/// events (close request, key window, size). The app owns what is inside.
@MainActor
final class SceneGtkWindow {
    let window: UnsafeMutablePointer<GtkWindow>
    /// The SDK's header bar: the title, the close button, a prominent scene's Done button.
    private let headerBar: UnsafeMutablePointer<GtkWidget>
    /// The user asked to close the window (its close button, the compositor's binding).
    var onCloseRequest: (() -> Void)?
    /// The compositor made the window the activated one, or stopped (its keyboard focus; the
    /// toplevel's state, not GTK's `is-active`, which needs a keyboard on the seat).
    var onActiveChanged: ((Bool) -> Void)?
    /// The compositor gave the window a new size.
    var onSizeChanged: ((WindowSize) -> Void)?
    /// A key (not a modifier) went down in the window, before any widget saw it.
    var onKey: (() -> Void)?
    /// One of the shortcuts given to `setShortcuts` was pressed (its canonical name, e.g.
    /// `ctrl+shift+n`). Return false to let the widgets have the key after all.
    var onShortcut: ((String) -> Bool)?
    /// The modifiers held changed while the window has the keyboard.
    var onModifiers: ((KeyModifiers) -> Void)?
    /// The compositor gave the mapped window a handle other clients may name it by (empty:
    /// it is unmapped).
    var onExported: ((String) -> Void)?
    /// The Done button of a prominent scene's header bar was clicked.
    var onDone: (() -> Void)?
    private(set) var size = WindowSize(width: 0, height: 0)
    private var surfaceHandlers: (surface: OpaquePointer, ids: [gulong])?
    private(set) var isActivated = false
    private var keyboardHandler: (device: OpaquePointer, id: gulong)?
    private var shortcutController: OpaquePointer?

    init(title: String, defaultSize: WindowSize = WindowSize(width: 640, height: 480)) {
        window = UnsafeMutableRawPointer(gtk_window_new()).assumingMemoryBound(to: GtkWindow.self)
        g_object_ref_sink(window)
        gtk_window_set_title(window, title)
        gtk_window_set_default_size(window, Int32(defaultSize.width), Int32(defaultSize.height))
        // A header bar with the title and a close button: where the compositor draws no title
        // bar (weston, GNOME), it is what moves and closes the window.
        headerBar = gtk_header_bar_new()
        gtk_window_set_titlebar(window, headerBar)
        // The window outlives being closed: closing it disconnects the scene, the broker decides.
        gtk_window_set_hide_on_close(window, 0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        typealias CloseRequest = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean
        let close: CloseRequest = { _, context in
            MainActor.assumeIsolated { SceneGtkWindow.from(context)?.onCloseRequest?() }
            return 1  // handled: the window stays until the broker moves the scene
        }
        _ = wb_signal_connect(window, "close-request", unsafeBitCast(close, to: UnsafeRawPointer.self), context)
        typealias Realize = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let realized: Realize = { _, context in
            MainActor.assumeIsolated { SceneGtkWindow.from(context)?.watchSurface() }
        }
        _ = wb_signal_connect(window, "realize", unsafeBitCast(realized, to: UnsafeRawPointer.self), context)
        let mapped: Realize = { _, context in
            MainActor.assumeIsolated { SceneGtkWindow.from(context)?.export() }
        }
        _ = wb_signal_connect(window, "map", unsafeBitCast(mapped, to: UnsafeRawPointer.self), context)
        addKeyController(context)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> SceneGtkWindow? {
        context.map { Unmanaged<SceneGtkWindow>.fromOpaque($0).takeUnretainedValue() }
    }

    private var widget: UnsafeMutablePointer<GtkWidget> { UnsafeMutableRawPointer(window).assumingMemoryBound(to: GtkWidget.self) }

    /// The surface's size as the compositor configured it (GdkSurface::layout; the window's
    /// own size, without the shadow around it), and whether it is the activated toplevel.
    private func watchSurface() {
        guard let native = gtk_native_get_surface(OpaquePointer(window)) else { return }
        forgetSurface()
        typealias Layout = @convention(c) (UnsafeMutableRawPointer?, Int32, Int32, UnsafeMutableRawPointer?) -> Void
        let layout: Layout = { _, _, _, context in
            MainActor.assumeIsolated {
                guard let window = SceneGtkWindow.from(context) else { return }
                let size = WindowSize(width: Int(gtk_widget_get_width(window.widget)), height: Int(gtk_widget_get_height(window.widget)))
                guard size != window.size, size.width > 0 else { return }
                window.size = size
                window.onSizeChanged?(size)
            }
        }
        typealias Notify = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let state: Notify = { surface, _, context in
            MainActor.assumeIsolated {
                guard let window = SceneGtkWindow.from(context), let surface else { return }
                let focused = gdk_toplevel_get_state(OpaquePointer(surface)).rawValue & GDK_TOPLEVEL_STATE_FOCUSED.rawValue != 0
                guard focused != window.isActivated else { return }
                window.isActivated = focused
                window.onActiveChanged?(focused)
            }
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        let raw = UnsafeMutableRawPointer(native)
        surfaceHandlers = (native, [
            wb_signal_connect(raw, "layout", unsafeBitCast(layout, to: UnsafeRawPointer.self), context),
            wb_signal_connect(raw, "notify::state", unsafeBitCast(state, to: UnsafeRawPointer.self), context),
        ])
    }

    private func forgetSurface() {
        if let old = surfaceHandlers {
            for id in old.ids { g_signal_handler_disconnect(UnsafeMutableRawPointer(old.surface), id) }
        }
        surfaceHandlers = nil
    }

    /// Keys in the capture phase, for the command key hold: a key pressed while it is held
    /// makes the hold a shortcut, not a request for the overlay.
    private func addKeyController(_ context: UnsafeMutableRawPointer) {
        let controller = gtk_event_controller_key_new()
        gtk_event_controller_set_propagation_phase(controller, GTK_PHASE_CAPTURE)
        typealias Key = @convention(c) (UnsafeMutableRawPointer?, guint, guint, GdkModifierType, UnsafeMutableRawPointer?) -> gboolean
        let pressed: Key = { _, keyval, _, _, context in
            MainActor.assumeIsolated {
                // A modifier's own press is no key (the held ones come from the keyboard device).
                if KeyModifiers(modifierKey: keyval) == nil { SceneGtkWindow.from(context)?.onKey?() }
            }
            return 0
        }
        _ = wb_signal_connect(UnsafeMutableRawPointer(controller), "key-pressed", unsafeBitCast(pressed, to: UnsafeRawPointer.self), context)
        gtk_widget_add_controller(widget, controller)
        watchModifiers(context)
    }

    /// The shortcuts of the app's main menu as GTK shortcut triggers on the window, in the
    /// capture phase (before any widget): GTK matches each in whatever keyboard layout is
    /// active. Replaces the ones set before.
    func setShortcuts(_ names: [String]) {
        if let old = shortcutController { gtk_widget_remove_controller(widget, old) }
        let controller = gtk_shortcut_controller_new()!
        gtk_event_controller_set_propagation_phase(controller, GTK_PHASE_CAPTURE)
        for name in names {
            guard let (keyval, modifiers) = Self.trigger(name) else { continue }
            let target = Unmanaged.passRetained(ShortcutTarget(window: self, name: name)).toOpaque()
            typealias Activated = @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> gboolean
            let activated: Activated = { _, _, target in
                guard let target else { return 0 }
                return MainActor.assumeIsolated {
                    let shortcut = Unmanaged<ShortcutTarget>.fromOpaque(target).takeUnretainedValue()
                    return shortcut.window?.onShortcut?(shortcut.name) == true ? 1 : 0
                }
            }
            typealias Release = @convention(c) (UnsafeMutableRawPointer?) -> Void
            let release: Release = { target in
                if let target { Unmanaged<ShortcutTarget>.fromOpaque(target).release() }
            }
            let action = gtk_callback_action_new(unsafeBitCast(activated, to: GtkShortcutFunc.self), target, unsafeBitCast(release, to: GDestroyNotify.self))
            gtk_shortcut_controller_add_shortcut(controller, gtk_shortcut_new(gtk_keyval_trigger_new(keyval, modifiers), action))
        }
        gtk_widget_add_controller(widget, controller)
        shortcutController = controller
    }

    /// A shortcut as the main menu names it (`ctrl+shift+bracketleft`) as a GTK key trigger:
    /// the key's keyval (xkb names are GDK's, whose capitals the menu's lower case drops) and
    /// the modifiers. nil when GDK has no such key.
    static func trigger(_ name: String) -> (guint, GdkModifierType)? {
        var parts = name.split(separator: "+").map(String.init)
        guard let key = parts.popLast() else { return nil }
        var modifiers: UInt32 = 0
        for part in parts {
            switch part {
            case "ctrl": modifiers |= GDK_CONTROL_MASK.rawValue
            case "alt": modifiers |= GDK_ALT_MASK.rawValue
            case "shift": modifiers |= GDK_SHIFT_MASK.rawValue
            case "super": modifiers |= GDK_SUPER_MASK.rawValue
            default: return nil
            }
        }
        let void = guint(GDK_KEY_VoidSymbol)
        for spelling in [key, key.prefix(1).uppercased() + key.dropFirst(), key.uppercased()] {
            let keyval = gdk_keyval_from_name(spelling)
            if keyval != void, keyval != 0 { return (keyval, GdkModifierType(rawValue: modifiers)) }
        }
        return nil
    }

    /// The modifiers held, as the compositor reports them to the seat's keyboard: a modifier
    /// set on a virtual keyboard (wtype -M) comes with no key event at all.
    private func watchModifiers(_ context: UnsafeMutableRawPointer) {
        guard let seat = gdk_display_get_default_seat(gtk_widget_get_display(widget)), let keyboard = gdk_seat_get_keyboard(seat) else { return }
        typealias Notify = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let changed: Notify = { device, _, context in
            MainActor.assumeIsolated {
                guard let window = SceneGtkWindow.from(context), let device, window.isActivated else { return }
                window.onModifiers?(KeyModifiers(gdk: gdk_device_get_modifier_state(OpaquePointer(device))))
            }
        }
        keyboardHandler = (keyboard, wb_signal_connect(UnsafeMutableRawPointer(keyboard), "notify::modifier-state", unsafeBitCast(changed, to: UnsafeRawPointer.self), context))
    }

    func setTitle(_ title: String) {
        gtk_window_set_title(window, title)
    }

    var isVisible: Bool { gtk_widget_get_visible(widget) != 0 }

    /// Maps the window; GTK asks the compositor for the keyboard with what the user did last.
    func show() {
        gtk_window_present(window)
    }

    /// Asks the compositor to give the mapped window the keyboard (xdg-activation): with the
    /// token of whoever asked for the scene, else one the window requests in its own name.
    /// False when it could not ask (no xdg-activation on this compositor).
    func activate(token: String?) -> Bool {
        guard let surface = waylandToplevel, let display = gdk_surface_get_display(surface) else { return false }
        let appID = g_get_prgname().map { String(cString: $0) } ?? ""
        return wb_activate_surface(gdk_wayland_display_get_wl_display(display), gdk_wayland_surface_get_wl_surface(surface), appID, token) != 0
    }

    func hide() {
        isActivated = false
        size = WindowSize(width: 0, height: 0)  // shown again, it is told its size again
        if exported, let toplevel = waylandToplevel {
            gdk_wayland_toplevel_unexport_handle(toplevel)
            exported = false
            onExported?("")
        }
        gtk_widget_set_visible(widget, 0)
    }

    /// The window as GTK draws it now (its widget tree, rendered by its own renderer), and the
    /// same fitted into a card; nil when it is not on screen.
    func snapshot() -> WindowSnapshot? {
        let width = gtk_widget_get_width(widget), height = gtk_widget_get_height(widget)
        guard width > 0, height > 0, gtk_widget_get_mapped(widget) != 0,
              let renderer = gtk_native_get_renderer(OpaquePointer(window)) else { return nil }
        let paintable = gtk_widget_paintable_new(widget)
        defer { g_object_unref(UnsafeMutableRawPointer(paintable)) }
        func render(scale: Double) -> Data? {
            let snapshot = gtk_snapshot_new()
            if scale != 1 { gtk_snapshot_scale(snapshot, Float(scale), Float(scale)) }
            gdk_paintable_snapshot(paintable, snapshot, Double(width), Double(height))
            guard let node = gtk_snapshot_free_to_node(snapshot) else { return nil }
            defer { gsk_render_node_unref(node) }
            var bounds = graphene_rect_t()
            graphene_rect_init(&bounds, 0, 0, Float((Double(width) * scale).rounded()), Float((Double(height) * scale).rounded()))
            guard let texture = gsk_renderer_render_texture(renderer, node, &bounds) else { return nil }
            defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
            guard let bytes = gdk_texture_save_to_png_bytes(texture) else { return nil }
            defer { g_bytes_unref(bytes) }
            var length: gsize = 0
            guard let data = g_bytes_get_data(bytes, &length) else { return nil }
            return Data(bytes: data, count: Int(length))
        }
        guard let png = render(scale: 1) else { return nil }
        let box = WindowSnapshot.thumbnailBox
        let fit = min(Double(box.width) / Double(width), Double(box.height) / Double(height), 1)
        return WindowSnapshot(png: png, thumbnailPNG: render(scale: fit))
    }

    // MARK: Presented prominently

    private var exported = false
    private(set) var isDimmed = false
    private var doneButton: UnsafeMutablePointer<GtkWidget>?

    /// The window's toplevel on a Wayland display (nil before it is realized, or elsewhere).
    private var waylandToplevel: OpaquePointer? {
        guard let surface = gtk_native_get_surface(OpaquePointer(window)),
              wb_display_is_wayland(gdk_surface_get_display(surface)) != 0 else { return nil }
        return surface
    }

    /// Exports the mapped window (xdg-foreign), so that a prominent scene can be its child.
    private func export() {
        guard !exported, let toplevel = waylandToplevel else { return }
        // weston has no xdg-foreign: asking would only make GDK warn.
        guard gdk_wayland_display_query_registry(gdk_surface_get_display(toplevel), "zxdg_exporter_v2") != 0 else { return }
        typealias Exported = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void
        let done: Exported = { _, handle, context in
            MainActor.assumeIsolated {
                guard let window = SceneGtkWindow.from(context), let handle, window.exported else { return }
                window.onExported?(String(cString: handle))
            }
        }
        exported = gdk_wayland_toplevel_export_handle(toplevel, unsafeBitCast(done, to: GdkWaylandToplevelExported.self),
                                                      Unmanaged.passUnretained(self).toOpaque(), nil) != 0
    }

    /// Makes the window the transient child of the window exported as `handle` (another
    /// process's): the compositor keeps it over that one, as a sheet. Call before showing it.
    func setParent(exportedAs handle: String) {
        gtk_widget_realize(widget)
        guard let toplevel = waylandToplevel else { return }
        _ = gdk_wayland_toplevel_set_transient_for_exported(toplevel, handle)
    }

    /// A prominent scene's header bar has a Done button (at its start) that dismisses it.
    func showDoneButton(_ shown: Bool) {
        if shown, doneButton == nil {
            let button = gtk_button_new_with_label("Done")!
            gtk_widget_add_css_class(button, "suggested-action")
            typealias Clicked = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
            let clicked: Clicked = { _, context in
                MainActor.assumeIsolated { SceneGtkWindow.from(context)?.onDone?() }
            }
            _ = wb_signal_connect(UnsafeMutableRawPointer(button), "clicked", unsafeBitCast(clicked, to: UnsafeRawPointer.self),
                                  Unmanaged.passUnretained(self).toOpaque())
            gtk_header_bar_pack_start(OpaquePointer(headerBar), button)
            doneButton = button
        } else if !shown, let button = doneButton {
            gtk_header_bar_remove(OpaquePointer(headerBar), button)
            doneButton = nil
        }
    }

    /// Behind a prominent scene of its app: drawn dimmed, and no key, click or text reaches it.
    func setDimmed(_ dimmed: Bool) {
        guard dimmed != isDimmed else { return }
        isDimmed = dimmed
        for part in [gtk_window_get_titlebar(window), gtk_window_get_child(window)] {
            guard let part else { continue }
            gtk_widget_set_opacity(part, dimmed ? 0.45 : 1)
        }
        gtk_widget_set_sensitive(widget, dimmed ? 0 : 1)
    }

    /// The picture in place of the window's widgets while a restored scene restores, and what
    /// it stands in for.
    private var placeholder: (titlebar: UnsafeMutablePointer<GtkWidget>?, content: UnsafeMutablePointer<GtkWidget>?)?
    var showsPlaceholder: Bool { placeholder != nil }

    /// Shows `png`, the picture the scene left when it went to the background (header bar and
    /// all), in place of the window's widgets: in the title bar's place, the app's content
    /// hidden, not taken out (its focus and state stay as the app restores them). False when
    /// it is no picture.
    func showPlaceholder(png: Data) -> Bool {
        guard placeholder == nil, !png.isEmpty else { return false }
        let bytes = png.withUnsafeBytes { g_bytes_new($0.baseAddress, gsize($0.count)) }
        defer { g_bytes_unref(bytes) }
        var error: UnsafeMutablePointer<GError>?
        guard let texture = gdk_texture_new_from_bytes(bytes, &error) else {
            if let error { g_error_free(error) }
            return false
        }
        defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
        guard let picture = gtk_picture_new_for_paintable(texture) else { return false }
        gtk_picture_set_can_shrink(OpaquePointer(picture), 1)
        let titlebar = gtk_window_get_titlebar(window)
        if let titlebar { g_object_ref(UnsafeMutableRawPointer(titlebar)) }
        let content = gtk_window_get_child(window)
        gtk_window_set_titlebar(window, picture)
        gtk_widget_remove_css_class(picture, "titlebar")  // drawn as it is, not as a header bar
        if let content { gtk_widget_set_visible(content, 0) }
        placeholder = (titlebar, content)
        return true
    }

    /// The live widgets again, exactly where the picture showed them.
    func removePlaceholder() {
        guard let placeholder else { return }
        self.placeholder = nil
        gtk_window_set_titlebar(window, placeholder.titlebar)
        if let titlebar = placeholder.titlebar { g_object_unref(UnsafeMutableRawPointer(titlebar)) }
        if let content = placeholder.content { gtk_widget_set_visible(content, 1) }
    }

    /// Destroys the window (the scene disconnects).
    func destroy() {
        forgetSurface()
        if let keyboard = keyboardHandler { g_signal_handler_disconnect(UnsafeMutableRawPointer(keyboard.device), keyboard.id) }
        keyboardHandler = nil
        gtk_window_destroy(window)
        g_object_unref(window)
    }
}
