/* Per-call figures of one region (or of the whole program, as one call),
 * read from a summary: what compare shows and explain reasons about. */
#ifndef MEMTRACE_FIGURES_H
#define MEMTRACE_FIGURES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "memtrace/events.h"

#define MT_WHOLE_PROGRAM "(whole program)"

/* Every field from `calls` to `peak_rss` is a double: mt_figures_combine
 * walks them. */
struct mt_call_figures {
	const char *region;
	double calls;			/* calls of the region measured */
	double time_min_s, time_median_s;
	double user_s, system_s;	/* per call, from here on */
	double faults;			/* minor + major */
	double syscalls[MT_SYS_COUNT];	/* best source */
	double syscalls_by_allocator[MT_SYS_COUNT];
	double syscalls_inferred[MT_SYS_COUNT];
	/* the program's own calls, as the interposers saw them (those the
	 * allocator made apart): exact where the kernel counters started
	 * after the allocator's first mappings; 0 in older summaries */
	double syscalls_own[MT_SYS_COUNT];
	double syscall_bytes[MT_SYS_COUNT]; /* interposed and inferred */
	/* the program's own calls' bytes, as the interposers saw them; < 0
	 * in summaries without the allocator's part */
	double syscall_bytes_own[MT_SYS_COUNT];
	double dontneed, free_advice;	/* madvise(MADV_DONTNEED/FREE) */
	double hugepage_advice;		/* madvise(MADV_HUGEPAGE): NumPy's */
	double purged_bytes;		/* the bytes of those */
	/* The program's own MADV_DONTNEED and MADV_FREE (on its own memory,
	 * not the allocator's) and their bytes: not in the three above. */
	double own_purges, own_purged_bytes;
	/* of those, the purges of memory purged before, and their bytes
	 * again; < 0 in summaries without them */
	double own_purges_again, own_purged_again_bytes;
	double brk_grow, brk_shrink, brk_grow_bytes, brk_shrink_bytes;
	/* glibc's thread arenas shrunk from inside free() (madvise) */
	double thread_heap_shrinks, thread_heap_shrink_bytes;
	double allocations, bytes_allocated;
	double large_allocs, large_bytes, large_frees;
	double realloc_moves, realloc_copied_bytes; /* copies of moved blocks */
	double calloc_bytes;			    /* asked of calloc */
	/* Of the anonymous memory unmapped (munmap, glibc's mapped chunks
	 * freed), the bytes touched, and those in transparent huge pages: all,
	 * and the allocator's; 0 where not measured (summary's
	 * "unmapped_touched") */
	double unmapped_touched, unmapped_touched_huge;
	double unmapped_touched_by_allocator, unmapped_touched_huge_by_allocator;
	/* the same of the memory purged with madvise ("purged_touched") */
	double purged_touched, purged_touched_huge;
	double purged_touched_by_allocator, purged_touched_huge_by_allocator;
	/* glibc's mapped chunks resized in place by realloc: grown (fresh
	 * pages) and shrunk (pages given back), how many and bytes */
	double remap_grow, remap_grow_bytes, remap_shrink, remap_shrink_bytes;
	/* the program's own malloc_trim calls, and of the break's moves back
	 * (brk_shrink) those they made, and their bytes */
	double trim_calls, trim_shrinks, trim_shrink_bytes;
	/* and of those calls, the ones that gave other resident memory back
	 * (glibc's madvise of free pages inside its heaps), and its bytes:
	 * counted in dontneed, purged_bytes and the allocator's madvise */
	double trim_purges, trim_purged_bytes;
	/* and the madvise calls those made, where the kernel's count tells
	 * (glibc's malloc_trim makes one a free stretch of the heap); else
	 * trim_purges */
	double trim_madvise;
	/* the allocator's purges inside large callocs, of the blocks they
	 * returned: its way of zeroing them (0 in older summaries) */
	double calloc_purges, calloc_purged_bytes;
	double large_max_live;		/* not per call: at once */
	double large_p95;		/* not per call: 95% of the large
					   requests are of this power-of-two
					   class or below (its lower bound) */
	double large_p95_bytes;		/* the same for their bytes: the
					   class each page's fault is paid
					   in */
	/* the bytes asked in blocks of a page (4 KiB) or more: each such
	 * block's pages are its own, given back whole when it is freed */
	double page_block_bytes;
	double large_share_32m;		/* not per call: the share of the
					   large requests' bytes in blocks of
					   32 MiB or more */
	double peak_live, peak_rss;	/* whole process */
	/* Resident memory as sampled (the summary's "resident", resident.h):
	 * the sample before exit with the most memory kept (anonymous, not
	 * the program's own mappings, and never live again), the most live
	 * from then on, how long half of that much was kept, and at exit */
	double resident_samples, kept_bytes, anon_at_kept, live_later,
		program_mapped_at_kept, anon_max, anon_exit, live_exit;
	double live_at_kept; /* live at that sample (a summary without it:
				live_later) */
	double large_live_at_kept; /* the large blocks' part of it; -1: not
				      recorded (before trace 1.12) */
	double small_live_max; /* the most live in small blocks at a sample;
				  -1: not recorded */
	double kept_sustained, kept_s, sampled_s;
	double threads;			/* the process's, over the run */
	/* The shim's own time per call, estimated (the summary's
	 * "shim_cost"; in a region, its calls at the measured cost per
	 * call), and its share of the CPU time (not per call) */
	double shim_s, shim_share;
	bool kernel;			/* syscalls come from the kernel */
	bool whole;			/* the whole run, which has no regions */
	const char *fault_source;
	/* glibc's thresholds as the shim followed them (the summary's
	 * "glibc_thresholds", glibc only): the run's, and of several runs
	 * the first one's, not combined. */
	bool glibc_thresholds, thresholds_dynamic;
	bool thresholds_by_mallopt; /* fixed by the program's own mallopt */
	/* glibc's thread arenas' heaps deleted whole, as the shim saw them,
	 * and their bytes (whole runs only) */
	double heaps_deleted, heaps_deleted_bytes;
	bool shim_known; /* the summary has "shim_cost" */
	double mmap_threshold, trim_threshold, threshold_raises;
	/* The most a setting of the mmap threshold is taken at: 32 MiB
	 * (HEAP_MAX_SIZE / 2) before glibc 2.36, or where the version is not
	 * known; none (0) from 2.36 (measured: 64 MiB to 1 GiB taken, and
	 * blocks of 40 to 900 MiB kept on the heap). */
	double mmap_threshold_ceiling;
};

/* The figures of region `name` in summary s (or of the whole program when
 * name is MT_WHOLE_PROGRAM).  False when s has no such region. */
bool mt_figures_of(json_t *s, const char *name, struct mt_call_figures *out);

/* The region names in s, in order; the whole program when it has none. */
size_t mt_region_names(json_t *s, const char **names, size_t max);

/* Several runs of the same region: the fastest call's time, the median of
 * the medians, and the median of each other figure. */
void mt_figures_combine(const struct mt_call_figures *runs, size_t n,
			struct mt_call_figures *out);

#endif
