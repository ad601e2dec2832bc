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

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libmemtrace.so.  Weak, so that they are NULL without it. */
void memtrace_region_begin(const char *name) __attribute__((weak));
void memtrace_region_end(const char *name) __attribute__((weak));

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
