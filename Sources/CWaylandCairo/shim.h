// The system libraries a scene's window draws with: libwayland-client, cairo and pango.
// Only CSceneWindow uses them; Swift code sees scene_window.h instead.
#include <wayland-client.h>
#include <pango/pangocairo.h>
