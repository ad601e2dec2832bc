/* What copying a byte costs on this machine: how much of a run's time
 * the bytes realloc copied and calloc zeroed can account for. */
#ifndef MEMTRACE_COPY_COST_H
#define MEMTRACE_COPY_COST_H

/* Seconds a byte of memcpy between two resident buffers of 64 MiB takes,
 * measured once in this process (the least of three); or
 * MEMTRACE_COPY_COST_NS, nanoseconds, when set.  0 when not known. */
double mt_copy_cost_s(void);

#endif
