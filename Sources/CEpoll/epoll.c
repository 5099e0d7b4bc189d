// Nothing to compile: the header is the module (SwiftPM wants one source file per C target).
#include "CEpoll.h"
