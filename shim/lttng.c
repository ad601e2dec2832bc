/* LTTng-UST as a sink (sink.h): each event to the memtrace tracepoint
 * provider (libmemtrace-lttng.so), loaded only when MEMTRACE_LTTNG=1 so a
 * process that does not ask never maps lttng-ust. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "lttng.h"
#include "lttng_sink.h"
#include "memtrace/trace_events.h"
#include "mode.h"
#include "options.h"
#include "process_facts.h"
#include "sink.h"
#include "thread.h"
#include "objects.h"

static const struct mt_lttng_sink *provider;

#define PROVIDER "libmemtrace-lttng.so"

/* The provider is installed (and built) next to the shim. */
static bool provider_path(char *out, size_t size)
{
	struct mt_object shim;
	if (!mt_object_of((void *)mt_lttng_start, &shim))
		return false;
	const char *slash = strrchr(shim.path, '/');
	int dir = slash ? (int)(slash - shim.path + 1) : 0;
	int n = snprintf(out, size, "%.*s%s", dir, shim.path, PROVIDER);
	return n > 0 && (size_t)n < size;
}

/* What lttng-ust does inside a call (allocate, take its locks across a
 * fork) is the shim's work, not the program's, and its own memory calls
 * are not sent back into it: a thread's first event registers it with
 * lttng-ust's RCU under a lock, and the registry's mmap would otherwise
 * emit an event that waits for that same lock. */
#define INSIDE_LTTNG(call)                                                   \
	do {                                                                 \
		if (mt_tls.in_lttng)                                         \
			break;                                               \
		mt_tls.hidden++;                                             \
		mt_tls.in_lttng = true;                                      \
		call;                                                        \
		mt_tls.in_lttng = false;                                     \
		mt_tls.hidden--;                                             \
	} while (0)

/* The events: LTTng has the thread (its vtid context) and the time. */
static void on_alloc(struct mt_thread *t, int entry, size_t align, size_t size,
		     const void *p, size_t usable)
{
	(void)t;
	INSIDE_LTTNG(provider->alloc(entry, align, size, p, usable));
}

static void on_free(struct mt_thread *t, const void *p, size_t usable)
{
	(void)t;
	INSIDE_LTTNG(provider->free(p, usable));
}

static void on_realloc(struct mt_thread *t, int entry, const void *old,
		       size_t old_usable, bool old_freed, size_t size,
		       const void *p, size_t usable)
{
	(void)t;
	INSIDE_LTTNG(provider->realloc(entry, old, old_usable, old_freed, size, p,
				       usable));
}

static void on_usable(struct mt_thread *t, const void *p)
{
	(void)t;
	INSIDE_LTTNG(provider->usable(p));
}

static void on_syscall(struct mt_thread *t, int entry, bool by_allocator,
		       uint64_t addr, uint64_t len, uint64_t arg, int64_t result)
{
	(void)t;
	INSIDE_LTTNG(provider->syscall(entry, by_allocator, addr, len, arg,
				       result));
}

static void on_sys_count(struct mt_thread *t, int sys, bool by_allocator,
			 uint64_t bytes, int advice)
{
	(void)t;
	INSIDE_LTTNG(provider->sys_count(sys, by_allocator, bytes, advice));
}

static void on_heap_move(struct mt_thread *t, uintptr_t from, uintptr_t to,
			 unsigned inferred_syscalls)
{
	(void)t;
	INSIDE_LTTNG(provider->heap_move(from, to, inferred_syscalls));
}

static void on_chunk_map(struct mt_thread *t, int sys, uint64_t bytes)
{
	(void)t;
	INSIDE_LTTNG(provider->chunk_map(sys, bytes));
}

static void on_fault(struct mt_thread *t, uint32_t tid, uint64_t addr,
		     uint64_t ip, uint64_t time_ns)
{
	(void)t;
	INSIDE_LTTNG(provider->page_fault(tid, addr, ip, time_ns));
}

static void on_kernel_call(struct mt_thread *t, uint32_t tid, int sys,
			   bool exit, uint64_t time_ns, const uint64_t arg[3])
{
	(void)t;
	INSIDE_LTTNG(provider->kernel_call(tid, sys, exit, time_ns, arg));
}

static void on_lost_samples(struct mt_thread *t, uint64_t count)
{
	(void)t;
	INSIDE_LTTNG(provider->samples_lost(count));
}

static void on_region(struct mt_thread *t, int tag, int id, const char *name,
		      uint64_t wall_ns)
{
	(void)t;
	INSIDE_LTTNG(provider->region(tag, id, name, wall_ns));
}

static void on_counters(struct mt_thread *t, const uint64_t *values, size_t n)
{
	(void)t;
	INSIDE_LTTNG(provider->counters(values, n));
}

static void on_baseline(struct mt_thread *t, const uint64_t *values, size_t n)
{
	(void)t;
	INSIDE_LTTNG(provider->baseline(values, n));
}

static void on_event(struct mt_thread *t, int tag, const uint64_t *fields,
		     size_t n)
{
	(void)t;
	INSIDE_LTTNG(provider->event(mt_event_kinds[tag].name, fields, n));
}

/* The exit record is LTTng's last event of the process. */
static void on_finish(const struct mt_closing *record)
{
	INSIDE_LTTNG(provider->exit(record->json, record->len));
	mt_sink_off(MT_SINK_LTTNG);
}

static const struct mt_sink lttng_sink = {
	.alloc = on_alloc,
	.free = on_free,
	.realloc = on_realloc,
	.usable = on_usable,
	.syscall = on_syscall,
	.sys_count = on_sys_count,
	.heap_move = on_heap_move,
	.chunk_map = on_chunk_map,
	.fault = on_fault,
	.kernel_call = on_kernel_call,
	.lost_samples = on_lost_samples,
	.region = on_region,
	.counters = on_counters,
	.baseline = on_baseline,
	.event = on_event,
	.finish = on_finish,
};


bool mt_lttng_start(void)
{
	char path[PATH_MAX];

	if (!mt_opt.lttng)
		return false;
	if (!provider_path(path, sizeof path)) {
		mt_warn("MEMTRACE_LTTNG: cannot locate the shim's directory; "
			"no LTTng events");
		return false;
	}
	/* lttng-ust starts its threads and registers with the session
	 * daemon from the provider's constructors, here. */
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		mt_warn("MEMTRACE_LTTNG: cannot load %s (%s); install lttng-ust "
			"(Debian: liblttng-ust1) and build memtrace with "
			"liblttng-ust-dev; no LTTng events",
			path, dlerror());
		return false;
	}
	const struct mt_lttng_sink *sink = dlsym(lib, MT_LTTNG_SINK_SYMBOL);
	if (!sink || sink->version != MT_LTTNG_SINK_VERSION) {
		mt_warn("MEMTRACE_LTTNG: %s is not this memtrace's provider "
			"(rebuild and install both together); no LTTng events",
			path);
		return false;
	}
	provider = sink;
	mt_sink_on(MT_SINK_LTTNG, &lttng_sink);
	return true;
}

void mt_lttng_announce(pid_t parent)
{
	static char json[16384];
	if (!__atomic_load_n(&mt_sinks[MT_SINK_LTTNG], __ATOMIC_RELAXED))
		return;
	size_t len = mt_process_facts_json(json, sizeof json, parent);
	if (len)
		INSIDE_LTTNG(provider->metadata(json, len));
}

/* lttng-ust's locks are taken across fork (it would otherwise hold them
 * in a child with none of its threads). */
void mt_lttng_fork_prepare(void)
{
	if (provider)
		INSIDE_LTTNG(provider->fork_prepare());
}

void mt_lttng_fork_parent(void)
{
	if (provider)
		INSIDE_LTTNG(provider->fork_parent());
}

void mt_lttng_fork_child(void)
{
	if (provider)
		INSIDE_LTTNG(provider->fork_child());
}
