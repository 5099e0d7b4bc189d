// Focus for a scene's window when the broker, not the user, makes it the key scene (`wmctl
// activate`, a scene's request): the window asks the compositor for the keyboard through
// xdg-activation, with the token of whoever asked or one it requests in its own name. GTK's own
// request carries its seat and the serial of the last input event the window had, which it has
// none of when the broker decides: compositors that check the serial refuse it.
#ifndef SCENE_ACTIVATION_H
#define SCENE_ACTIVATION_H

struct wl_display;
struct wl_surface;

/// Activates `surface` (a toplevel of the connection `display`, GTK's) with `token`, or with a
/// token requested for `app_id` without a seat when `token` is NULL or empty. Runs on the thread
/// that runs GTK; waits for the compositor's answer on a queue of its own. 0 when the compositor
/// has no xdg-activation.
int wb_activate_surface(struct wl_display *display, struct wl_surface *surface, const char *app_id, const char *token);

#endif
