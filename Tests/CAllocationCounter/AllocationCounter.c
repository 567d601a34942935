// Counts the test executable's heap allocations. Without a sanitizer it interposes the C
// allocator, forwarding every call to glibc's own implementation (__libc_malloc and friends),
// so behaviour is unchanged; under a sanitizer it uses the sanitizer's allocation hooks. A
// thread-local switch decides whether an allocation is counted.
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
static __thread uint64_t bytes;

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SPOOL_SANITIZER_HOOKS 1
#endif
#endif

void spool_allocation_counting_begin(void) { count = 0; bytes = 0; counting = 1; }
uint64_t spool_allocation_counting_bytes(void) { return bytes; }
uint64_t spool_allocation_counting_end(void) { counting = 0; return count; }

#ifdef SPOOL_SANITIZER_HOOKS
// AddressSanitizer and ThreadSanitizer bring their own allocator, which interposition would
// bypass; they call these hooks on every allocation instead, so the count means the same.
#include <sanitizer/allocator_interface.h>
static void spool_on_malloc(const volatile void *pointer, size_t size) {
    (void)pointer;
    if (counting) { count++; bytes += size; }
}
static void spool_on_free(const volatile void *pointer) { (void)pointer; }
__attribute__((constructor)) static void spool_install_allocation_hooks(void) {
    __sanitizer_install_malloc_and_free_hooks(spool_on_malloc, spool_on_free);
}
#else
static inline void note(size_t size) { if (counting) { count++; bytes += size; } }
void *malloc(size_t size) { note(size); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { note(n * size); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { note(size); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { note(size); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { note(size); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    note(size);
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
#endif
