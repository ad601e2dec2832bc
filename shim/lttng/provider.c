/* libmemtrace-lttng.so: the memtrace tracepoint provider and the sink the
 * shim calls into.  Loaded by the shim (never linked to it) so that only
 * processes asked to use LTTng map lttng-ust. */
#define _GNU_SOURCE
#include <signal.h>

#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "memtrace_tp.h"

#include <lttng/ust-fork.h>

#include "../lttng_sink.h"
#include "../visibility.h"
#include "memtrace/events.h"
#include "memtrace/trace_format.h"

#define U(x) ((uint64_t)(uintptr_t)(x))

static void on_realloc(int entry, const void *old, size_t old_usable,
		       bool old_freed, size_t size, const void *p,
		       size_t usable);

static void on_alloc(int entry, size_t align, size_t size, const void *p,
		     size_t usable)
{
	switch (entry) {
#define ALLOC(id, name)                                                      \
	case MT_CALL_##id:                                                   \
		lttng_ust_tracepoint(memtrace, name, align, size, U(p),      \
				     usable);                                \
		break;
		ALLOC(MALLOC, malloc)
		ALLOC(CALLOC, calloc)
		ALLOC(POSIX_MEMALIGN, posix_memalign)
		ALLOC(ALIGNED_ALLOC, aligned_alloc)
		ALLOC(MEMALIGN, memalign)
		ALLOC(VALLOC, valloc)
		ALLOC(PVALLOC, pvalloc)
#undef ALLOC
	case MT_CALL_REALLOC: /* of NULL: a new block, nothing freed */
	case MT_CALL_REALLOCARRAY:
		on_realloc(entry, NULL, 0, false, size, p, usable);
		break;
	}
}

static void on_free(const void *p, size_t usable)
{
	lttng_ust_tracepoint(memtrace, free, U(p), usable);
}

static void on_realloc(int entry, const void *old, size_t old_usable,
		       bool old_freed, size_t size, const void *p,
		       size_t usable)
{
	if (entry == MT_CALL_REALLOCARRAY)
		lttng_ust_tracepoint(memtrace, reallocarray, U(old), old_usable,
				     old_freed, size, U(p), usable);
	else
		lttng_ust_tracepoint(memtrace, realloc, U(old), old_usable,
				     old_freed, size, U(p), usable);
}

static void on_usable(const void *p)
{
	lttng_ust_tracepoint(memtrace, malloc_usable_size, U(p));
}

static void on_syscall(int entry, bool by_allocator, uint64_t addr,
		       uint64_t len, uint64_t arg, int64_t result)
{
	switch (entry) {
#define CALL(id, name)                                                       \
	case MT_CALL_##id:                                                   \
		lttng_ust_tracepoint(memtrace, name, by_allocator, addr, len, \
				     arg, result);                           \
		break;
		CALL(MMAP, mmap)
		CALL(MMAP64, mmap64)
		CALL(MUNMAP, munmap)
		CALL(MREMAP, mremap)
		CALL(BRK, brk)
		CALL(SBRK, sbrk)
		CALL(MADVISE, madvise)
		CALL(SYSCALL, syscall)
#undef CALL
	}
}

static void on_sys_count(int sys, bool by_allocator, uint64_t bytes,
			 int advice)
{
	lttng_ust_tracepoint(memtrace, sys, sys, by_allocator, bytes, advice);
}

static void on_heap_move(uintptr_t from, uintptr_t to, unsigned inferred)
{
	lttng_ust_tracepoint(memtrace, heap_move, from, to, inferred);
}

static void on_chunk_map(int sys, uint64_t bytes)
{
	lttng_ust_tracepoint(memtrace, chunk_map, sys, bytes);
}

static void on_page_fault(uint32_t tid, uint64_t addr, uint64_t ip,
			  uint64_t time_ns)
{
	lttng_ust_tracepoint(memtrace, page_fault, tid, addr, ip, time_ns);
}

static void on_kernel_call(uint32_t tid, int sys, bool exit, uint64_t time_ns,
			   const uint64_t arg[3])
{
	lttng_ust_tracepoint(memtrace, kernel_call, tid, sys, exit, time_ns,
			     arg);
}

static void on_samples_lost(uint64_t count)
{
	lttng_ust_tracepoint(memtrace, samples_lost, count);
}

static void on_region(int tag, int id, const char *name, uint64_t wall_ns)
{
	if (tag == MT_EV_REGION_NAME)
		lttng_ust_tracepoint(memtrace, region_name, id, name);
	else if (tag == MT_EV_REGION_BEGIN)
		lttng_ust_tracepoint(memtrace, region_begin, id);
	else if (tag == MT_EV_REGION_END)
		lttng_ust_tracepoint(memtrace, region_end, id, wall_ns);
}

static void on_counters(const uint64_t *values, size_t n)
{
	lttng_ust_tracepoint(memtrace, counters, values, n);
}

static void on_event(const char *name, const uint64_t *values, size_t n)
{
	lttng_ust_tracepoint(memtrace, event, name, values, n);
}

static void on_baseline(const uint64_t *values, size_t n)
{
	lttng_ust_tracepoint(memtrace, baseline, values, n);
}

static void on_exit_summary(const char *json, size_t len)
{
	lttng_ust_tracepoint(memtrace, exit, json, len);
}

static void on_metadata(const char *json, size_t len)
{
	lttng_ust_tracepoint(memtrace, metadata, json, len);
}

/* What liblttng-ust-fork.so does, for a program that did not preload it:
 * the child of a fork gets its own registration with the session daemon,
 * so its events are recorded too. */
static sigset_t fork_sigset;

static void before_fork(void)
{
	lttng_ust_before_fork(&fork_sigset);
}

static void after_fork_parent(void)
{
	lttng_ust_after_fork_parent(&fork_sigset);
}

static void after_fork_child(void)
{
	lttng_ust_after_fork_child(&fork_sigset);
}

MT_EXPORT const struct mt_lttng_sink
	memtrace_lttng_sink = {
		.version = MT_LTTNG_SINK_VERSION,
		.alloc = on_alloc,
		.free = on_free,
		.realloc = on_realloc,
		.usable = on_usable,
		.syscall = on_syscall,
		.sys_count = on_sys_count,
		.heap_move = on_heap_move,
		.chunk_map = on_chunk_map,
		.page_fault = on_page_fault,
		.kernel_call = on_kernel_call,
		.samples_lost = on_samples_lost,
		.region = on_region,
		.counters = on_counters,
		.baseline = on_baseline,
		.event = on_event,
		.exit = on_exit_summary,
		.metadata = on_metadata,
		.fork_prepare = before_fork,
		.fork_parent = after_fork_parent,
		.fork_child = after_fork_child,
};
