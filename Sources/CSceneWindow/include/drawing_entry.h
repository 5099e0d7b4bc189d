// The drawing library's one exported symbol (see CSceneWindowLoader's drawing_library.h).
#ifndef DRAWING_ENTRY_H
#define DRAWING_ENTRY_H
#include "drawing_library.h"  // found through the target's header search path
#endif
