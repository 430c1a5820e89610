// glibc's mallopt, mallinfo2 and malloc_trim, for the daemon's allocator policy (Sources/LanbridgeBridge/Service/AllocatorPolicy.swift).
#if defined(__linux__) && __has_include(<malloc.h>)
#include <malloc.h>
#endif
