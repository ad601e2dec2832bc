/* What copying a byte costs on this machine: how much of a run's time
 * the bytes realloc copied and calloc zeroed can account for. */
#ifndef MEMTRACE_COPY_COST_H
#define MEMTRACE_COPY_COST_H

/* Seconds a byte of memcpy between two resident buffers of 64 MiB takes,
 * measured once in this process (the least of three); or
 * MEMTRACE_COPY_COST_NS, nanoseconds, when set.  0 when not known. */
double mt_copy_cost_s(void);
/* The same for memset of a resident buffer of 64 MiB
 * (MEMTRACE_ZERO_COST_NS): the least zeroing a block can cost, as an
 * allocator's calloc does with a block it reuses (some 5x faster than a
 * copy here, and half what zeroing NumPy's reused 64 MiB grids took). */
double mt_zero_cost_s(void);

#endif
