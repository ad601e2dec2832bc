/* An allocator's own per-thread counts of the bytes a thread allocated
 * and freed, where it keeps them where the shim can read them: jemalloc's
 * (mallctl "thread.allocatedp" and "thread.deallocatedp", pointers into
 * its thread state that its fast paths bump by each block's usable size).
 * A malloc's or free's usable size is then the change of a counter across
 * the call: two loads where malloc_usable_size costs a lookup in the
 * allocator (about 2.3 ns each way on jemalloc here). */
#ifndef MEMTRACE_ALLOCATOR_COUNTERS_H
#define MEMTRACE_ALLOCATOR_COUNTERS_H

#include <stdbool.h>

#include "visibility.h"

/* (Whether it has them: mt_alloc_counters, mode.h.) */

/* Whether the allocator resolved as malloc has them; called once. */
bool mt_alloc_counters_probe(void);
/* This thread's counters into mt_tls (allocated_ctr, freed_ctr), once:
 * called right after the thread's first malloc, when the allocator's
 * state for the thread certainly exists (asking for it in a thread's
 * teardown would make jemalloc set it up again). */
void mt_alloc_counters_fetch(void);

#endif
