/* Resident memory over the run, beside the heap's live bytes (rss.c): what
 * tells memory the allocator keeps from memory the program uses. */
#ifndef MEMTRACE_RSS_H
#define MEMTRACE_RSS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "summary.h"
#include "thread.h"
#include "visibility.h"

/* Open /proc/self/statm and take the first sample (at start-up, and in a
 * child after fork, which has a /proc/self of its own).  With events
 * recorded, a thread of the shim's own samples every MEMTRACE_RSS ms (a
 * look costs about 6 us: 0.03% of a CPU at 20 ms); without, the program's
 * threads do, after freeing a large block or another MiB of small ones,
 * at most that often (sooner when the thread's live bytes grew by an
 * eighth since the highest sampled, or fell by a sixteenth since its last
 * sample: rss.c). */
void mt_rss_start(void);
/* What the sampling thread (a trace's) also writes every 100 ms: the
 * process's figures the closing record would carry (report.c), so that a
 * process killed before exit is measured up to then. */
void mt_rss_write_progress_with(void (*write)(struct mt_thread *t));
void mt_rss_restart_in_child(void);
/* An anonymous mapping [addr, addr + len) of MT_LARGE_BYTES or more is
 * about to be unmapped (by_allocator: the allocator's doing), or
 * (`purge`) its pages handed back with madvise: its bytes resident, and
 * those in transparent huge pages, counted and emitted (unmap_touched,
 * purge_touched), where the kernel tells them (rss.c): only where huge
 * pages may back it, since the faults count a churn of 4 KiB pages. */
extern MT_HIDDEN bool mt_rss_huge_possible;
void mt_rss_giving_back_slow(void *addr, size_t len, bool by_allocator,
			     bool purge);
static inline void mt_rss_unmapping(void *addr, size_t len, bool by_allocator)
{
	if (__atomic_load_n(&mt_rss_huge_possible, __ATOMIC_RELAXED))
		mt_rss_giving_back_slow(addr, len, by_allocator, false);
}
static inline void mt_rss_purging(void *addr, size_t len, bool by_allocator)
{
	if (__atomic_load_n(&mt_rss_huge_possible, __ATOMIC_RELAXED))
		mt_rss_giving_back_slow(addr, len, by_allocator, true);
}
/* The process advised memory for huge pages (MADV_HUGEPAGE): where they
 * are given only so, unmappings are looked at from now on. */
void mt_rss_huge_advised(void);
/* The last sample, at exit; none is taken after it. */
void mt_rss_at_exit(struct mt_thread *t);
/* The process's anonymous resident bytes now (statm); false where they
 * cannot be read. */
bool mt_rss_anon_now(uint64_t *anon);
/* What the samples showed, for the summary. */
void mt_rss_figures(struct mt_resident *out);

/* CLOCK_MONOTONIC_COARSE ns when the next sample after a large free is
 * due (UINT64_MAX: not sampled that way). */
extern MT_HIDDEN uint64_t mt_rss_due_ns;
void mt_rss_sample_after_free(struct mt_thread *t, size_t freed);

/* The thread freed another MiB in small blocks: a sample if one is due
 * (a program that frees only small blocks, millions of strings, had none
 * between start and exit, and the memory its allocator kept went
 * unseen). */
void mt_rss_after_small_frees(struct mt_thread *t);

/* The thread's first malloc, of `usable` bytes, after a sample its live
 * bytes' fall took on glibc (small_sites.c's slow way, which that sample
 * arms): see rss.c. */
void mt_rss_after_fall(struct mt_thread *t, size_t usable);

/* Threads so armed, and one more while glibc fills the blocks it hands
 * out: while there are any, glibc's malloc looks before its call too
 * (mt_rss_before_malloc), which it does of n bytes. */
extern MT_HIDDEN int mt_rss_falls_armed;
void mt_rss_before_malloc(size_t n);
/* A thread that ends armed. */
void mt_rss_thread_exit(struct mt_thread *t);

/* A call asked for a large block of `bytes`, which it may touch before
 * the block is counted allocated: realloc, copying into it, and glibc's
 * malloc, filling it.  A sample meanwhile counts it live (thread.h). */
static inline void mt_rss_large_request(struct mt_thread *t, size_t bytes)
{
	__atomic_store_n(&t->large_in_flight, bytes, __ATOMIC_RELAXED);
}

/* Just after a large block of `freed` usable bytes was freed. */
static inline void mt_rss_after_large_free(struct mt_thread *t, size_t freed)
{
	if (__builtin_expect(__atomic_load_n(&mt_rss_due_ns, __ATOMIC_RELAXED) !=
				     UINT64_MAX,
			     0))
		mt_rss_sample_after_free(t, freed);
}

/* free's real call of a large block returned: its pages are gone
 * (mt_count_free_of marked it in flight), and a sample may be due. */
static inline void mt_rss_large_freed(struct mt_thread *t, size_t freed)
{
	__atomic_store_n(&t->large_in_flight, 0, __ATOMIC_RELAXED);
	mt_rss_after_large_free(t, freed);
}

#endif
