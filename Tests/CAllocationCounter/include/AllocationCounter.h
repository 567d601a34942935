#ifndef SPOOL_ALLOCATION_COUNTER_H
#define SPOOL_ALLOCATION_COUNTER_H
#include <stdint.h>

/// Starts counting heap allocations made by the calling thread.
void spool_allocation_counting_begin(void);
/// Stops counting and returns the allocations (malloc, calloc, realloc, memalign family)
/// the calling thread made since `spool_allocation_counting_begin`.
uint64_t spool_allocation_counting_end(void);
/// Bytes those allocations asked for (a realloc counts its new size), so far.
uint64_t spool_allocation_counting_bytes(void);

#endif
