/* The events the shim hands to LTTng-UST: the native trace's events and
 * fields (shim/trace.h), without the thread (LTTng's vtid context) or the
 * time (LTTng's clock).  libmemtrace-lttng.so implements them; the shim
 * loads it only when MEMTRACE_LTTNG=1, so a process that does not ask never
 * maps lttng-ust. */
#ifndef MEMTRACE_LTTNG_SINK_H
#define MEMTRACE_LTTNG_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_LTTNG_SINK_SYMBOL "memtrace_lttng_sink"
#define MT_LTTNG_SINK_VERSION 3

struct mt_lttng_sink {
	unsigned version;
	void (*alloc)(int entry, size_t align, size_t size, const void *p,
		      size_t usable);
	void (*free)(const void *p, size_t usable);
	void (*realloc)(int entry, const void *old, size_t old_usable,
			bool old_freed, size_t size, const void *p,
			size_t usable);
	void (*usable)(const void *p);
	void (*syscall)(int entry, bool by_allocator, uint64_t addr,
			uint64_t len, uint64_t arg, int64_t result);
	void (*sys_count)(int sys, bool by_allocator, uint64_t bytes,
			  int advice);
	void (*heap_move)(uintptr_t from, uintptr_t to,
			  unsigned inferred_syscalls);
	void (*chunk_map)(int sys, uint64_t bytes);
	void (*page_fault)(uint32_t tid, uint64_t addr, uint64_t ip,
			   uint64_t time_ns);
	void (*kernel_call)(uint32_t tid, int sys, bool exit, uint64_t time_ns,
			    const uint64_t arg[3]);
	void (*samples_lost)(uint64_t count);
	void (*region)(int tag, int id, const char *name, uint64_t wall_ns);
	/* Counter snapshots and the exit summary: arrays and JSON as the
	 * native trace stores them. */
	void (*counters)(const uint64_t *values, size_t n);
	/* Any other event of varints (memtrace/trace_events.h), by name:
	 * memtrace:event. */
	void (*event)(const char *name, const uint64_t *values, size_t n);
	void (*baseline)(const uint64_t *values, size_t n);
	void (*exit)(const char *json, size_t len);
	/* The native trace's header metadata (JSON): a process's first
	 * event, and again after fork and exec. */
	void (*metadata)(const char *json, size_t len);
	/* lttng-ust's fork handling (what liblttng-ust-fork.so does), called
	 * by the shim around fork so that the child registers as a process
	 * of its own, with its threads started as the shim's work. */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
};

#endif
