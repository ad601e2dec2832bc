/* A sink: where recorded events go.  The native trace (trace.c) and LTTng
 * (lttng.c) each fill in one of these; emit.h hands every event to the
 * sinks that are on (mode.h).  The events and their fields are those of
 * include/memtrace/trace_events.h.  A sink leaves NULL what it has no use
 * for. */
#ifndef MEMTRACE_SINK_H
#define MEMTRACE_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mt_thread;

/* The closing record (the figures no event carries, as JSON): whole, and
 * without the call sites, for a sink that writes those itself. */
struct mt_closing {
	const char *json, *without_sites;
	size_t len, without_sites_len;
};

struct mt_sink {
	/* Events, on the thread t that saw them. */
	void (*alloc)(struct mt_thread *t, int entry, size_t align, size_t size,
		      const void *p, size_t usable);
	void (*free)(struct mt_thread *t, const void *p, size_t usable);
	void (*realloc)(struct mt_thread *t, int entry, const void *old,
			size_t old_usable, bool old_freed, size_t size,
			const void *p, size_t usable);
	void (*usable)(struct mt_thread *t, const void *p);
	void (*syscall)(struct mt_thread *t, int entry, bool by_allocator,
			uint64_t addr, uint64_t len, uint64_t arg,
			int64_t result);
	void (*sys_count)(struct mt_thread *t, int sys, bool by_allocator,
			  uint64_t bytes, int advice);
	void (*heap_move)(struct mt_thread *t, uintptr_t from, uintptr_t to,
			  unsigned inferred_syscalls);
	void (*chunk_map)(struct mt_thread *t, int sys, uint64_t bytes);
	/* A kernel sample, recorded by whichever thread collected it. */
	void (*fault)(struct mt_thread *t, uint32_t tid, uint64_t addr,
		      uint64_t ip, uint64_t time_ns);
	void (*kernel_call)(struct mt_thread *t, uint32_t tid, int sys,
			    bool exit, uint64_t time_ns, const uint64_t arg[3]);
	void (*lost_samples)(struct mt_thread *t, uint64_t count);
	void (*region)(struct mt_thread *t, int tag, int id, const char *name,
		       uint64_t wall_ns);
	/* Counter snapshots (MT_COUNTERS_VALUES values) and the counters
	 * when recording began. */
	void (*counters)(struct mt_thread *t, const uint64_t *values, size_t n);
	void (*baseline)(struct mt_thread *t, const uint64_t *values, size_t n);
	void (*forked)(struct mt_thread *t, pid_t parent);
	/* Any event whose fields are all varints (trace_events.h), by tag:
	 * what MT_EMIT_EVENT sends, so that a new event needs no sink code. */
	void (*event)(struct mt_thread *t, int tag, const uint64_t *fields,
		      size_t n);

	/* Threads and the process. */
	void (*thread_attach)(struct mt_thread *t);
	void (*thread_exit)(struct mt_thread *t);
	void (*exec)(const char *path);
	void (*exec_failed)(void);
	/* _exit, or a fatal signal: safe in a signal handler. */
	void (*exit_now)(int status);
	void (*crash)(int sig);
	/* exit(): the closing record, then the end. */
	void (*finish)(const struct mt_closing *record);
};

#endif
