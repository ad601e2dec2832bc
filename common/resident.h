/* Resident memory over a run, beside the heap's live bytes: how much of it
 * the allocator kept after the program freed it, and for how long.  The
 * shim folds its samples (shim/rss.c) and the trace reader folds the rss
 * events (analyzers/replay.c) with the same code, so the two agree. */
#ifndef MEMTRACE_RESIDENT_H
#define MEMTRACE_RESIDENT_H

#include <stdbool.h>
#include <stdint.h>

#include "memtrace/trace_events.h"

/* The samples, in at most this many points: when they fill up, two
 * neighbours become one (the larger of each figure), so a run of any
 * length is kept at a resolution of 1/256 of its length or better. */
#define MT_RESIDENT_POINTS 512
/* "Sustained": kept for at least this share of the time sampled. */
#define MT_KEPT_SUSTAINED_SHARE 0.2

/* A figure a sample does not have (large_live_bytes before trace 1.12). */
#define MT_RESIDENT_UNKNOWN UINT64_MAX

struct mt_resident_point {
	/* live_bytes: with the block whose free took the sample, if any;
	 * live_now: without it; large_live: the large blocks' part of it */
	uint64_t time_ms, anon_bytes, live_bytes, program_mapped_bytes, live_now;
	uint64_t large_live;
	/* The live bytes held from this point to the next (or the exit):
	 * no burst of frees ran in between.  Only such stretches count as
	 * memory kept: while a program frees what it holds (a teardown, just
	 * before exit), the allocator has not kept it yet, it has been given
	 * it a moment ago. */
	bool held;
};

struct mt_resident_series {
	uint64_t samples;
	uint64_t anon_bytes_max;
	/* the most live in small blocks (below MT_LARGE_BYTES) at a sample:
	 * the most memory they ever covered (MT_RESIDENT_UNKNOWN: a sample
	 * without large_live_bytes) */
	uint64_t small_live_max;
	uint32_t n, per_point, in_last; /* points; samples per point */
	uint64_t last_live_now;		/* of the last sample */
	bool ended;			/* the exit sample came */
	struct mt_ev_rss exit;
	struct mt_resident_point p[MT_RESIDENT_POINTS];
};

/* What the samples say.  Memory kept at a sample: anonymous resident
 * memory that was neither mapped by the program itself nor ever live in
 * the heap again from that sample to the end (so memory the allocator
 * holds for blocks the program allocates again soon is not counted: that
 * is a cache in use, not memory kept). */
struct mt_resident {
	uint64_t samples; /* 0: not sampled */
	uint64_t anon_bytes_max;
	/* The worst point, and its figures: the sample before exit that kept
	 * the most in the longest stretch kept at kept_bytes_sustained or
	 * more (not a teardown's moment, that keeps the most with nothing
	 * live); live_bytes_later is the most the heap had live from then
	 * on. */
	uint64_t kept_bytes_max;
	uint64_t anon_bytes_at_kept_max, live_bytes_later,
		program_mapped_at_kept_max;
	/* and the live bytes at that sample, the block whose free took it
	 * not counted: what still holds memory there; the large blocks' part
	 * of them (MT_RESIDENT_UNKNOWN: not recorded) */
	uint64_t live_bytes_at_kept_max, large_live_bytes_at_kept_max;
	/* The most live in small blocks at any sample before exit
	 * (MT_RESIDENT_UNKNOWN: not recorded, before trace 1.12). */
	uint64_t small_live_bytes_max;
	/* The most memory kept for at least a fifth of the time sampled (a
	 * moment, an interpreter's teardown, is not what a program pays
	 * for), for how long that much was kept while the live bytes held
	 * (the stretches in which the program was freeing it do not count),
	 * and the time from the first sample to the last (the exit's, if
	 * any). */
	uint64_t kept_bytes_sustained, kept_ms, sampled_ms;
	/* The sample at exit. */
	uint64_t anon_bytes_exit, live_bytes_exit;
};

/* One sample (an rss event) added; s->time_ms never goes back.  fell:
 * the sample was taken because the live bytes of the thread that took it
 * fell by a sixteenth since its last one (the shim without a trace,
 * shim/rss.c): a burst of frees ran up to it.  Otherwise the live bytes
 * held since the last sample if they fell by at most an eighth of them
 * and 2 MiB (a MiB of small frees between the shim's looks, the rest of a
 * burst after its last sixteenth). */
void mt_resident_fold(struct mt_resident_series *series,
		      const struct mt_ev_rss *s, bool fell);
void mt_resident_figures(const struct mt_resident_series *series,
			 struct mt_resident *out);

#endif
