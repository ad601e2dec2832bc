/* purge-churn: the allocator hands dirty pages back with madvise
 * (MADV_DONTNEED, MADV_FREE) and the program faults them back in. */
#include <stdio.h>
#include <string.h>

#include "rules.h"
#include "sites.h"

/* Settings that make each allocator keep its dirty pages.  jemalloc's
 * oversize arena is named only for a program with threads: measured on
 * jemalloc 5.3, oversize_threshold:0 took a NumPy program of threads from
 * 1.2 million faults to 24 thousand (7.9 s -> 3.1 s), and did nothing or
 * hurt on single-threaded ones (np_temporaries 2.9 -> 3.3 s,
 * cpp_vector_growth 0.80 -> 0.94 s, c_trim_churn and c_mmap_churn: no
 * change); and only where the blocks that churn are oversize (8 MiB, its
 * default threshold, or more): for 8 threads of 1-12 KiB blocks it did
 * nothing (550k faults, 589k with it).  And it made another NumPy program
 * of four threads slower (arrays of 4-32 MiB: wall 2.19 -> 2.54 s, its
 * system time doubled, where never purging saved 12%; new-user trial 41):
 * offered to try, after the decay setting. */
#define JEMALLOC_OVERSIZE (8 << 20)

/* Purges made to zero memory for calloc, not to give it back: the
 * settings that keep dirty pages leave them, or bring them.  jemalloc
 * zeroes a freed extent it reuses for calloc by purging it (MADV_DONTNEED:
 * the kernel maps zero pages again), whatever its decay; where it purged
 * at the free already (its oversize arena), keeping the pages moves the
 * purge into calloc.  Measured on jemalloc 5.3: a hash table grown by
 * calloc, 40 rounds, 327k faults and 0.60 s with or without
 * dirty_decay_ms:-1 (234 of its 314 purges inside calloc), 4.4k and 0.13 s
 * with malloc and memset and that setting; np.zeros of 7.6 MiB in a loop,
 * 1.96M faults and 2.5 s either way, np.empty and fill(0) 0.8 s, with the
 * setting 6.5k faults and 0.35 s (new-user trial 18). */
static bool zeroing_purges_past(const char *backend,
				const struct mt_call_figures *f, double purges,
				double calloc_share)
{
	return f->calloc_purges >= 0.5 * purges ||
	       (!strcmp(backend, "jemalloc") && f->large_bytes > 0 &&
		f->calloc_bytes >= calloc_share * f->large_bytes);
}

/* Purges that are calloc's zeroing, said (half the large bytes calloc's
 * on jemalloc); and those so many that a setting that keeps freed pages
 * keeps too few to matter (all but a tenth).  Below that it keeps the
 * blocks malloc made (a frame from malloc and one from calloc, 48 MiB
 * each: MALLOC_CONF decay -1 withheld, where it saved 24%, faults 295k
 * -> 160k; new-user trial 35). */
#define ZEROING_SAID 0.5
#define ZEROING_MOSTLY 0.9

/* A setting that keeps every freed page is a trade of memory for
 * faults, which holds where the pages kept are used again, and may not
 * where the allocator already held many times what the program had live:
 * 8 threads of small blocks on jemalloc, 772 MiB resident at the peak for
 * 122 MiB live: never purging took it to 2.7 GiB, and more faults
 * (685k -> 764k; new-user trial 31); a buffer trimmed at 9x (trial 27).
 * But it did help another such program (612 MiB for 149 MiB live: 0.52
 * -> 0.37 s, +4% memory; trial 33): proposed there last, said so, for
 * --verify to measure. */
#define KEPT_ALREADY 3

static bool holds_many_times_live(const struct mt_call_figures *f)
{
	return f->peak_live > 0 && f->peak_rss > KEPT_ALREADY * f->peak_live;
}

static void keep_dirty_fixes(struct mt_finding *x, const char *backend,
			     const struct mt_call_figures *f, bool zeroing)
{
	char caveat[256] = "";
	if (!zeroing && f->calloc_bytes >= ZEROING_SAID * f->large_bytes &&
	    f->large_bytes > 0) {
		char part[32];
		snprintf(caveat, sizeof caveat,
			 "; it keeps the blocks malloc made, not calloc's (%s, "
			 "%.0f%% of the large blocks' bytes), which are zeroed by "
			 "a purge whatever it keeps",
			 mt_format_bytes(f->calloc_bytes, part, sizeof part),
			 100 * f->calloc_bytes / f->large_bytes);
	} else if (holds_many_times_live(f)) {
		char rss[32], live[32];
		snprintf(caveat, sizeof caveat,
			 "; but the process already held %s resident at its "
			 "peak for %s live at most, and keeping every freed page "
			 "may hold much more (--verify measures it)",
			 mt_format_bytes(f->peak_rss, rss, sizeof rss),
			 mt_format_bytes(f->peak_live, live, sizeof live));
	}
	double mean = f->large_allocs > 0 ? f->large_bytes / f->large_allocs : 0;
	bool oversize = f->threads > 1 && (f->large_p95 >= JEMALLOC_OVERSIZE ||
					   mean >= JEMALLOC_OVERSIZE);
	static const struct {
		const char *backend, *setting, *text;
		bool oversize_only, to_try;
	} settings[] = {
		{"jemalloc", "MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1",
		 "never purge dirty pages (memory freed stays in the process)",
		 false, false},
		{"jemalloc", "MALLOC_CONF=oversize_threshold:0",
		 "serve large blocks from the normal arenas, which keep dirty "
		 "pages for their decay time, rather than the oversize arena, "
		 "which purges at once (with threads)", true, true},
		{"tcmalloc", "TCMALLOC_RELEASE_RATE=0",
		 "never release free pages to the kernel", false, false},
		{"mimalloc", "MIMALLOC_ALLOW_DECOMMIT=0",
		 "never decommit free memory", false, false},
	};
	for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
		if (strcmp(settings[i].backend, backend) != 0 ||
		    (settings[i].oversize_only && !oversize) || zeroing)
			continue;
		struct mt_fix *fix = mt_fix_add(x, MT_FIX_SETTING);
		if (!fix)
			return;
		snprintf(fix->setting, sizeof fix->setting, "%s",
			 settings[i].setting);
		snprintf(fix->text, sizeof fix->text, "%s%s", settings[i].text,
			 caveat);
		fix->to_try = settings[i].to_try;
	}
}

static const char *const purged[] = {"purge_bytes", NULL};

/* Where the purges are calloc's zeroing: said, and the fix that avoids
 * them (keep_dirty_fixes then proposes none).  Where the blocks most
 * purged were made by a library function the program called (irfft pads
 * with np.zeros), the program cannot ask for them otherwise: said, and no
 * such fix (it was told to use np.empty for np.zeros it never called:
 * new-user trial 25). */
static void say_zeroing(struct mt_finding *x, const struct mt_rule_input *in,
			double by_allocator)
{
	json_t *top = in->sites ? mt_sites_ranked(in->sites, purged, 1) : NULL;
	json_t *stack = json_object_get(json_array_get(top, 0), "stack");
	const char *called = stack ? mt_site_called(stack) : NULL;
	const struct mt_call_figures *f = in->f;
	json_t *e = x->evidence;
	char b1[32], b2[32];
	json_object_set_new(e, "purges_in_calloc_per_call",
			    json_real(f->calloc_purges));
	if (f->calloc_purges >= 0.5 * by_allocator)
		mt_finding_append(x, " %.*f of the purges%s (%s) were made inside "
			 "calloc, each on the block it returned: %s hands the pages "
			 "of a freed block back to the kernel to have them "
			 "zeroed when calloc reuses it, so keeping freed "
			 "pages does not stop those.",
			 f->whole ? 0 : 2, f->calloc_purges,
			 f->whole ? "" : " per call",
			 mt_format_bytes(f->calloc_purged_bytes, b1, sizeof b1),
			 in->backend);
	else
		mt_finding_append(x, " %s large blocks come from calloc (%s of the "
			 "%s): jemalloc zeroes a freed block it reuses for "
			 "calloc by handing its pages back to the kernel, so "
			 "keeping freed pages (its decay settings) would move "
			 "those purges into calloc, not stop them%s.",
			 f->calloc_bytes >= ZEROING_MOSTLY * f->large_bytes ? "Its"
									     : "Part of its",
			 mt_format_bytes(f->calloc_bytes, b1, sizeof b1),
			 mt_format_bytes(f->large_bytes, b2, sizeof b2),
			 f->calloc_bytes >= ZEROING_MOSTLY * f->large_bytes
				 ? "" : "; it would keep the others'");
	if (called) {
		char label[512];
		mt_finding_append(x, " The blocks most purged are made inside "
				     "%s, the library's code, which %s calls: "
				     "the program cannot ask for them "
				     "otherwise, only call it less often.",
				  called,
				  mt_frame_label(json_array_get(stack, mt_site_own_frame(stack)),
						 label, sizeof label));
		json_decref(top);
		return;
	}
	json_decref(top);
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_CODE);
	if (fix)
		snprintf(fix->text, sizeof fix->text,
			 "allocate these blocks with malloc and write the "
			 "zeros yourself where they are needed%s, or keep "
			 "the block and clear it in place instead of freeing "
			 "it and asking calloc for another: a freed block is "
			 "then reused as it is%s",
			 in->numpy ? " (np.empty and then fill(0), or writing "
				     "every element, instead of np.zeros)"
				   /* (GCC's strlen pass makes calloc of
				    * them: new-user trial 35, a frame
				    * buffer malloc'ed and memset) */
				   : " (memset; GCC at -O2 turns a malloc "
				     "followed by a memset of the whole block "
				     "to zero into calloc, which "
				     "-fno-optimize-strlen stops)",
			 !strcmp(in->backend, "jemalloc")
				 ? "; with that, MALLOC_CONF=dirty_decay_ms:-1,"
				   "muzzy_decay_ms:-1 keeps the freed pages for it"
				 : "");
}

/* The program's own purges of its own memory (an arena of its own reset
 * with madvise(MADV_DONTNEED) after each batch, and written again: 40
 * calls of 38 MiB, 389k faults, 73% of the CPU, and no finding; without
 * the call 9.8k faults; new-user trial 29).  No allocator setting
 * changes them: the code that makes them is named. */
static struct mt_finding *own_purge_churn(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	struct mt_repetition r;
	char cost[2 * MT_TEXT], b[32], repeated[128] = "";
	/* (only memory purged again was taken again: a stream's chunks,
	 * each handed back once behind the cursor, were first touches; where
	 * a summary has no such count, all of them) */
	double again = f->own_purges_again >= 0 ? f->own_purges_again : f->own_purges;
	double again_bytes = f->own_purges_again >= 0 ? f->own_purged_again_bytes
						       : f->own_purged_bytes;
	if (!f->whole || f->own_purges < MT_CHURN_PER_CALL || f->faults < 1 ||
	    !mt_repeats_touched(in, again, again_bytes,
				f->purged_touched - f->purged_touched_by_allocator,
				f->purged_touched_huge -
					f->purged_touched_huge_by_allocator,
				&r))
		return NULL;
	struct mt_finding *x = mt_finding_new("purge-churn", in);
	if (!x)
		return NULL;
	json_t *e = x->evidence;
	json_object_set_new(e, "own_purges_per_call", json_real(f->own_purges));
	json_object_set_new(e, "own_purged_bytes_per_call",
			    json_real(f->own_purged_bytes));
	if (f->own_purges_again >= 0) {
		json_object_set_new(e, "own_purges_again_per_call", json_real(again));
		json_object_set_new(e, "own_purged_again_bytes_per_call",
				    json_real(again_bytes));
	}
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	mt_repetition_evidence(e, &r);
	/* (a summary without the count says nothing of which) */
	if (f->own_purges_again >= 0)
		snprintf(repeated, sizeof repeated,
			 ", %.0f of them on memory it had handed back before",
			 again);
	snprintf(x->explanation, sizeof x->explanation,
		 "Over the run, the program itself called madvise %.0f times "
		 "to hand pages of its own memory back to the kernel "
		 "(MADV_DONTNEED or MADV_FREE, %s each on average)%s, and "
		 "used the memory again meanwhile: the kernel supplies fresh "
		 "pages that fault on first touch. So %s These are the "
		 "program's own calls, on memory it manages itself: no "
		 "allocator setting changes them.",
		 f->own_purges,
		 mt_format_bytes(f->own_purged_bytes / f->own_purges, b, sizeof b),
		 repeated,
		 mt_repetition_cost(f, &r, "the program's madvise calls",
				    cost, sizeof cost));
	static const char *const own_keys[] = {"own_purge_bytes", NULL};
	mt_finding_sites(x, in, own_keys);
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_CODE);
	if (fix)
		snprintf(fix->text, sizeof fix->text,
			 "keep the pages where the memory is used again soon: "
			 "reset the memory's own bookkeeping (a pointer, a free "
			 "list) without the madvise call, and give pages back "
			 "only when the memory will stay unused, or only those "
			 "beyond what each round needs");
	return x;
}

struct mt_finding *mt_rule_purge_churn(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	double purges = f->dontneed + f->free_advice;
	double by_allocator = f->syscalls_by_allocator[MT_SYS_MADVISE];
	struct mt_repetition r;
	char cost[2 * MT_TEXT];

	/* The allocator's own purges, and faults to show for them. */
	if (purges < MT_CHURN_PER_CALL || f->faults < 1 ||
	    !mt_repeats_touched(in, by_allocator, f->purged_bytes,
				f->purged_touched_by_allocator,
				f->purged_touched_huge_by_allocator, &r))
		return own_purge_churn(in);
	struct mt_finding *x = mt_finding_new("purge-churn", in);
	if (!x)
		return NULL;
	double share = mt_system_share(f);
	json_t *e = x->evidence;
	json_object_set_new(e, "madvise_by_allocator_per_call",
			    json_real(by_allocator));
	json_object_set_new(e, "madv_dontneed_per_call", json_real(f->dontneed));
	json_object_set_new(e, "madv_free_per_call", json_real(f->free_advice));
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	json_object_set_new(e, "share_of_time", json_real(share));

	if (f->whole) {
		mt_repetition_evidence(e, &r);
		snprintf(x->explanation, sizeof x->explanation,
			 "Over the run, the allocator (%s) called madvise %.0f "
			 "times to hand freed pages back to the kernel (%.0f "
			 "MADV_DONTNEED, %.0f MADV_FREE), and the memory was "
			 "used again soon after: the kernel supplies fresh pages "
			 "that fault on first touch. So %s",
			 in->backend, by_allocator, f->dontneed, f->free_advice,
			 /* (jemalloc purges whole extents, touched or not: a
			  * 256 KiB-8 MiB scratch buffer a request, 16-80 KiB of
			  * it written, "gave back 102481488 pages" in a process
			  * of 5 MB resident; new-user trial 47) */
			 mt_repetition_cost(f, &r,
					    r.by_touch ||
							    r.given_back_pages <=
								    2 * r.refaults
						    ? "the purges"
						    : "the purges (of the ranges' "
						      "whole size, touched or not)",
					    cost, sizeof cost));
	} else {
		snprintf(x->explanation, sizeof x->explanation,
			 "In each call of %s the allocator (%s) calls madvise "
			 "%.2f times to hand freed pages back to the kernel "
			 "(%.2f MADV_DONTNEED, %.2f MADV_FREE), and the memory "
			 "is used again soon after: the kernel supplies fresh "
			 "pages that fault on first touch, %.0f page faults per "
			 "call, %.2f ms of system time, %.0f%% of the call.",
			 f->region, in->backend, by_allocator, f->dontneed,
			 f->free_advice, f->faults, f->system_s * 1e3,
			 share * 100);
	}
	if (f->trim_purges > 0) {
		/* (glibc's purges are the program's malloc_trim calls') */
		json_object_set_new(e, "purges_by_malloc_trim_per_call",
				    json_real(f->trim_purges));
		json_object_set_new(e, "bytes_purged_by_malloc_trim_per_call",
				    json_real(f->trim_purged_bytes));
		json_object_set_new(e, "madvise_by_malloc_trim_per_call",
				    json_real(f->trim_madvise));
		char b[32];
		int digits = f->whole ? 0 : 2;
		mt_finding_append(x, " %.*f of the madvise calls%s were made by %.*f "
			 "of the program's own calls of malloc_trim (%s given "
			 "back by them, free pages inside the heap, which glibc "
			 "gives back only when asked).",
			 digits, f->trim_madvise, f->whole ? "" : " per call",
			 digits, f->trim_purges,
			 mt_format_bytes(f->trim_purged_bytes, b, sizeof b));
		struct mt_fix *fix = mt_fix_add(x, MT_FIX_CODE);
		if (fix)
			snprintf(fix->text, sizeof fix->text,
				 "call malloc_trim less often: once the work "
				 "that frees is done, not each time round it, so "
				 "the pages given back are not what the next "
				 "round faults in again");
	}
	bool zeroing = zeroing_purges_past(in->backend, f, by_allocator, ZEROING_SAID);
	if (zeroing)
		say_zeroing(x, in, by_allocator);
	mt_finding_sites(x, in, purged);
	/* (last where the process already holds many times its live
	 * bytes: a gamble, said so) */
	bool gamble = holds_many_times_live(f);
	bool mostly = zeroing_purges_past(in->backend, f, by_allocator, ZEROING_MOSTLY);
	if (!gamble)
		keep_dirty_fixes(x, in->backend, f, mostly);
	/* (the other allocators keep a freed block and zero it whole for
	 * calloc, where a purge has the kernel zero the pages touched) */
	enum mt_zeroing whole = zeroing ? mt_calloc_zeroing(x, in, &r, true, true)
					: MT_ZEROING_NONE;
	int keepers = x->nfixes;
	if (whole != MT_ZEROING_OUTWEIGHS)
		mt_backend_fixes(x, in->backend, 0, f);
	for (int i = keepers; whole == MT_ZEROING_WEIGHS && i < x->nfixes; i++)
		x->fixes[i].to_try = true;
	if (whole == MT_ZEROING_NONE)
		mt_reuse_fix(x, in, false);
	if (gamble)
		keep_dirty_fixes(x, in->backend, f, mostly);
	return x;
}
