// The kernel's epoll interface for Swift: Glibc's module map leaves out <sys/epoll.h>.
// `DescriptorWatch` (WindowBroker) is its only user.
#ifndef WB_EPOLL_H
#define WB_EPOLL_H

#include <sys/epoll.h>

#endif
