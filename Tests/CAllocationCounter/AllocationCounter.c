// Interposes the C allocator for the test executable only. Every call is forwarded to
// glibc's own implementation (__libc_malloc and friends), so behaviour is unchanged; a
// thread-local switch decides whether the call is counted.
#define _GNU_SOURCE
#include "AllocationCounter.h"
#include <stddef.h>
#include <errno.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread int counting;
static __thread uint64_t count;

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPOOL_NO_INTERPOSITION 1
#endif
#endif

void spool_allocation_counting_begin(void) { count = 0; counting = 1; }
uint64_t spool_allocation_counting_end(void) { counting = 0; return count; }

// ThreadSanitizer brings its own allocator; under it nothing is interposed (and nothing counted).
#ifndef SPOOL_NO_INTERPOSITION
void *malloc(size_t size) { if (counting) count++; return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { if (counting) count++; return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { if (counting) count++; return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { if (counting) count++; return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { if (counting) count++; return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    if (counting) count++;
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
#endif
