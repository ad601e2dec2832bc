/* memtrace.h: mark regions of a program for memtrace.
 *
 *     #include <memtrace.h>
 *     memtrace_begin("decode");
 *     ...
 *     memtrace_end("decode");
 *
 * Under libmemtrace.so (LD_PRELOAD, or `memtrace run`), every call of a
 * region is measured on its own: allocator calls and bytes, memory system
 * calls, page faults, CPU and wall time, reported per region in the
 * summary.  Without it the calls do nothing and cost a test of a weak
 * symbol: a program needs no library to build or run. */
#ifndef MEMTRACE_H
#define MEMTRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libmemtrace.so.  Weak, so that they are NULL without it. */
void memtrace_region_begin(const char *name) __attribute__((weak));
void memtrace_region_end(const char *name) __attribute__((weak));

/* The process's kernel counters now (every thread; the system calls since
 * the shim started, the page faults since the process was forked), on
 * demand.  A field is UINT64_MAX when its counter is not available
 * (perf_event_open denied, tracefs missing: the system calls).  With a trace, the
 * reading is recorded in it too.  Returns 0, or -1 without the shim. */
struct memtrace_kernel_counters {
	uint64_t brk, mmap, munmap, mremap, madvise, mprotect;
	uint64_t minor_faults, major_faults;
};
int memtrace_read_kernel_counters(struct memtrace_kernel_counters *out)
	__attribute__((weak));

static inline int memtrace_kernel_counters(struct memtrace_kernel_counters *out)
{
	return memtrace_read_kernel_counters ? memtrace_read_kernel_counters(out)
					     : -1;
}

static inline void memtrace_begin(const char *name)
{
	if (memtrace_region_begin)
		memtrace_region_begin(name);
}

static inline void memtrace_end(const char *name)
{
	if (memtrace_region_end)
		memtrace_region_end(name);
}

#ifdef __cplusplus
}
#endif

#endif
