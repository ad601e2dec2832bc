/* Per-thread state.  The hot path touches only the calling thread's TLS and
 * its own counter block: no lock, no shared cache line. */
#ifndef MEMTRACE_THREAD_H
#define MEMTRACE_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "counters.h"

/* A counter block.  Blocks come from mmap (never from the heap we observe)
 * and are never freed: when a thread exits its block is released for reuse
 * by a later thread, and its counts stay in it, so a sum over all blocks
 * covers every thread that ever ran. */
struct mt_region_mark;
struct mt_trace_buf;
struct mt_walk_cache;
struct mt_python_lines;

struct mt_thread {
	struct mt_counters c;
	/* The marks every malloc or free compares with, in one cache line. */
	_Alignas(64) int64_t live_mark; /* next live-bytes level that checks
					   the peak */
	/* the allocated bytes at which the next small block's site is
	 * sampled (small_sites.c); 0: not drawn yet */
	uint64_t sample_at;
	/* the freed bytes at which small frees next look whether resident
	 * memory is due a sample (rss.h) */
	uint64_t rss_check_at;
	uint64_t sample_rng;
	/* the bytes the last size sampled stood for */
	size_t sample_weight_of;
	double sample_weight;
	/* the thread's samples so far, and how many times its interval
	 * has doubled with them (small_sites.c) */
	uint32_t samples_taken;
	uint8_t sample_shift;
	/* small blocks' samples of a few sites, by site id, not yet added
	 * to the sites' table (sites.c) */
	struct mt_small_tally {
		unsigned site; /* 0: none */
		uint64_t samples, bytes, estimate;
	} small_tally[4];
	/* the thread's live bytes at its last resident-memory sample, a
	 * fall below which is sampled at once (rss.h) */
	uint64_t rss_fall_from;
	/* when the thread last looked after a free, and the gap before that
	 * look: a pause in its frees (rss.c) */
	uint64_t rss_look_ns, rss_look_gap_ns;
	/* after such a sample on glibc: its time and the thread's CPU time
	 * then, for the look the next malloc takes (rss.c) */
	bool rss_after_fall;
	bool rss_sampled_before; /* the malloc was sampled before its call */
	uint64_t rss_fall_ns, rss_fall_cpu_ns;
	int64_t large_peak;	/* most large blocks live at once (this thread,
				   since the innermost open region began) */
	/* a large block whose pages may be resident though the counters
	 * say it is not live: counted freed, its real free not returned; or
	 * asked for, the real call (realloc's copy, glibc's fill) touching
	 * it before it is counted.  A sample counts it live (rss.c). */
	uint64_t large_in_flight;
	/* the thread arena it last freed into, and the shim's account of
	 * its size (glibc_heap.c) */
	const char *freed_arena;
	uintptr_t *freed_arena_accounted;
	struct mt_region_mark *marks; /* open regions (regions.c) */
	unsigned open_regions;
	/* the innermost open region measured: its index + 1 (0: none) and
	 * name, for the sites of the blocks allocated in it (sites.c) */
	unsigned region_now;
	const char *region_name_now;
	struct mt_trace_buf *trace; /* this thread's events (trace.c) */
	/* and those of signal handlers that interrupted it writing one */
	struct mt_trace_buf *signal_trace;
	struct mt_walk_cache *walks; /* stacks unwound (native_stack.c) */
	/* lines of Python frames named (python_frames.c) */
	struct mt_python_lines *python_lines;
	unsigned owners;	/* threads that took the block: a new one
				   finds another stack than the walks' */
	struct mt_thread *next; /* all blocks, newest first */
	int in_use;
};

/* In initial-exec TLS: a preloaded library gets static TLS, and the
 * general-dynamic model would call __tls_get_addr, which may allocate. */
struct mt_tls {
	struct mt_thread *thread; /* NULL until the thread's first event */
	unsigned hidden;	  /* > 0 while the shim does its own work */
	unsigned sys_seen;	  /* memory syscalls counted on this thread */
	unsigned sys_depth;	  /* syscall wrappers on this thread's stack */
	bool sys_by_allocator;	  /* the outermost one was called by it */
	const void *sys_caller;	  /* where the outermost one returns to */
	bool resolving;		  /* inside dlsym: serve from the boot arena */
	bool in_sites;		  /* inside sites.c (a signal handler's call
				     made meanwhile is not followed) */
	unsigned site;		  /* the site credited with the allocator's
				     syscalls now (sites.h), 0: none */
	uint64_t site_bytes;	  /* its block's, when freed */
	/* What the allocator did while site was MT_SITE_PENDING (a large
	 * block asked for, its site not known until the call returns), by
	 * cause (sites.h): how many times, how many bytes. */
	uint32_t pending_count[12];
	uint64_t pending_bytes[12];
	bool shim_thread;	  /* a thread of the shim's own */
	bool in_lttng;		  /* inside lttng-ust, emitting an event */
	bool seen;		  /* counted in threads_seen (once: a thread
				     attaches again in its teardown) */
	/* Inside the calloc of a large block: the allocator's purges made
	 * meanwhile, and the range they covered, which tell its zeroing of
	 * the block from a purge of other memory (mt_probe_calloc_done) */
	bool in_calloc;
	unsigned calloc_purges;
	uint64_t calloc_purged;
	uintptr_t calloc_purge_lo, calloc_purge_hi;
	/* the alternate signal stack the program gave this thread
	 * (stack_room.c), 0: none seen */
	uintptr_t alt_stack_low, alt_stack_high;
};
extern __thread struct mt_tls mt_tls __attribute__((tls_model("initial-exec")));

struct mt_thread *mt_thread_attach(void);

static inline struct mt_thread *mt_self(void)
{
	struct mt_thread *t = mt_tls.thread;
	return __builtin_expect(t != NULL, 1) ? t : mt_thread_attach();
}


/* Live bytes are derived (allocated - freed, summed over threads); the peak
 * is checked only when this thread's own live bytes pass its mark, which
 * keeps the hot path to one compare. */
void mt_peak_check(struct mt_thread *t, int64_t live);

/* A large block (MT_LARGE_BYTES or more) was allocated or freed. */
static inline void mt_large_alloc(struct mt_thread *t, size_t usable)
{
	mt_add(&t->c.large_allocs, 1);
	mt_add(&t->c.large_bytes, usable);
	/* (before its bytes are counted allocated: a sample between the
	 * two, nanoseconds, may miss it; a cost on every malloc would not) */
	__atomic_store_n(&t->large_in_flight, 0, __ATOMIC_RELAXED);
	int64_t live = (int64_t)(t->c.large_allocs - t->c.large_frees);
	if (live > t->large_peak)
		t->large_peak = live;
}

static inline void mt_large_free(struct mt_thread *t, size_t usable)
{
	mt_add(&t->c.large_frees, 1);
	mt_add(&t->c.large_freed_bytes, usable);
}

/* Set up the key whose destructor releases a block at thread exit, after
 * calling on_exit with it (lifecycle.c: what a thread's end means to the
 * sinks); the shim's own threads are started with `create`, glibc's
 * pthread_create rather than the shim's. */
typedef int mt_thread_create_fn(pthread_t *, const pthread_attr_t *,
				void *(*)(void *), void *);
void mt_threads_init(void (*on_exit)(struct mt_thread *),
		     mt_thread_create_fn *create);
/* Sum of every block, and the peak of live bytes seen. */
void mt_threads_sum(struct mt_counters *out);
/* The threads' large blocks in flight (struct mt_thread), read after
 * mt_threads_sum: a free it saw counted is here until its real call
 * returned. */
uint64_t mt_threads_large_in_flight(void);
/* The most large blocks one thread had live at once. */
uint64_t mt_threads_large_peak(void);
uint64_t mt_peak_live(void);
/* True when more than one thread allocated, so the peak is sampled. */
bool mt_peak_is_sampled(void);
unsigned mt_threads_seen(void);
/* The program started a thread (pthread_create), and how many it did. */
void mt_thread_started(void);
uint64_t mt_threads_started(void);
/* Every block, newest first (then follow ->next). */
struct mt_thread *mt_threads_first(void);
/* In a child after fork: its figures start from zero. */
void mt_threads_reset_after_fork(void);

/* Start a thread of the shim's own, running fn: hidden from the
 * program's figures, its stack's mapping counted as the shim's, every
 * signal blocked.  false when it could not start.  fn returns when
 * mt_shim_threads_paused() (it looks at least every 100 ms), which also
 * ends the process, as glibc would, when the program's last thread has
 * ended (by pthread_exit) and only the shim's are left. */
bool mt_start_shim_thread(void *(*fn)(void *));
bool mt_shim_threads_paused(void);
/* Stop the shim's threads (waiting for them to end): how many were
 * running; then start them again. */
unsigned mt_shim_threads_pause(void);
void mt_shim_threads_resume(void);
/* Stop them for good (this process and the children it forks from then
 * on): how many were running (none: then nothing changes).  Retired, no
 * more start: mt_start_shim_thread fails, and its callers need not say so
 * again. */
unsigned mt_shim_threads_retire(void);
bool mt_shim_threads_retired(void);
/* In a child after fork: the parent's threads are not there. */
void mt_shim_threads_forget(void);
/* Around setuid and its kind (whose calls glibc makes on every thread
 * when it knows of several): glibc told of the shim's threads, when it
 * was told the program's thread is alone (true: then told so again). */
bool mt_setxid_begin(void);
void mt_setxid_end(bool told);
/* CPU time the shim's threads have used (those running now, read from
 * their clocks; those that ended, as they ended).  Allocates nothing. */
double mt_shim_threads_cpu_s(void);
/* The page faults of the shim's threads that ended (each says its own as
 * it ends: no thread can read another's). */
uint64_t mt_shim_threads_faults(void);
/* At the start of such a thread. */
static inline void mt_become_shim_thread(void)
{
	mt_tls.hidden++;
	mt_tls.shim_thread = true;
}

#endif
