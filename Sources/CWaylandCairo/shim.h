// The system libraries the system UI's surfaces use: libwayland-client, xkbcommon (keys), cairo
// and pango. Only CSceneWindow uses them; Swift code sees system_surface.h instead.
#include <wayland-client.h>
#include <pango/pangocairo.h>
#include <xkbcommon/xkbcommon.h>
