#ifndef CMALLOC_SHIM_H
#define CMALLOC_SHIM_H
// glibc's allocator statistics (mallinfo2), which the Glibc module does not bring in: the
// soak benchmark tells memory still held from memory the allocator keeps.
#include <malloc.h>
#endif
