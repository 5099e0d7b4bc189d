// The system libraries a scene's window uses: libwayland-client, xkbcommon (keys), cairo and pango.
// Only CSceneWindow uses them; Swift code sees scene_window.h instead.
#include <wayland-client.h>
#include <pango/pangocairo.h>
#include <xkbcommon/xkbcommon.h>
