#ifndef CMALLOC_SHIM_H
#define CMALLOC_SHIM_H
// glibc's allocator controls and statistics (mallopt, mallinfo2), which the Glibc module does
// not bring in: AllocatorPolicy fixes the large-block threshold, and the soak benchmark tells
// memory still held from memory the allocator keeps.
#include <malloc.h>
#endif
