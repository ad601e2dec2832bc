/* When giving memory back and taking it again is churn.
 *
 * Within a region, the unit is the call: a cycle at least every other call
 * is churn (MT_CHURN_PER_CALL).  A run with no regions is one "call", so
 * "at least once" would call any program that ever trimmed its heap a
 * churner.  There the cycles are counted over the run, and they are churn
 * only when they repeat, when the pages they gave back fault again, and
 * when that costs the run a share of its time worth a change:
 *
 *   resident   the most pages the process ever had resident (peak RSS):
 *              faults up to that many can be first touch of a working set,
 *              however the memory came and went;
 *   given back the pages the cycles returned: churn returns the same memory
 *              again and again, more than the process ever held (a vector
 *              that doubles returns less than its final size in all);
 *   refaults   the faults beyond those: the memory given back is taken
 *              again when there are at least as many as cycles (a fault
 *              may bring in more than a page: a transparent huge page, the
 *              kernel's fault-around, so pages are not counted);
 *   touched    where the shim measured what each unmapped mapping held
 *              (its resident bytes just before, and those in transparent
 *              huge pages: the summary's unmapped_touched), the refaults
 *              are counted from that memory too: the bytes touched and
 *              given back beyond the most ever resident had to be touched
 *              again, at one fault a 4 KiB page and one a 2 MiB huge
 *              page.  With huge pages the faults are fewer than the pages
 *              resident, and the count above sees no refault at all (30
 *              mappings of 64 MiB made, touched and unmapped: 965 faults
 *              against 16,900 pages resident); the larger of the two
 *              counts is taken, as each is a lower bound;
 *   explained  the refaults the cycles can account for: no more than the
 *              pages they gave back, and where memory was also given back
 *              by other means (a heap trimmed and blocks unmapped), their
 *              part of the refaults in proportion to the pages each gave
 *              back, so that two findings never claim the same faults;
 *   cost       the run's system time in proportion to the faults explained
 *              (faults are what system time goes to in a run that churns),
 *              against the CPU time the run took: its wall time would
 *              count the time a busy machine did not run it; no more than
 *              twice what those faults cost on this machine (counted from
 *              the memory touched: a 4 KiB fault's cost for each small
 *              one, a huge page's for each huge one).
 *
 * These hold for any program; none is tuned to one. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

/* Two or three cycles are start-up, a phase change, or the end: not churn
 * (the other bars hold those back too: they give back less than twice what
 * the process holds).  At 10, nine rounds of a buffer doubled to 64 MiB,
 * 90% of their run in system time, were no finding. */
#define MIN_CYCLES 5
/* Fewer, down to three (the first cycle's faults are first touch: two
 * more are the least that repeat), are churn where they take a fifth of
 * the run's CPU: four rounds of a buffer grown to 300 MiB, 64% of their
 * run, were no finding, where keeping the buffer took the run from 2.02 s
 * to 0.60 (new-user trial 42); a vector grown for each of four files,
 * 9% of its run, is not one (tests/unannotated/EXPECTED.md). */
#define FEW_CYCLES 3
#define FEW_CYCLES_SHARE 0.20
/* The pages given back, against the most ever resident. */
#define MIN_TURNOVER 2.0
/* The least share of the run's CPU time worth a finding; and the margin
 * below it where churn that is there all the same is said, as minor: the
 * system time of a run moves by a third between runs on a busy machine,
 * and a cost measured either side of the bar is one story, not a finding
 * that comes and goes. */
#define MIN_SHARE 0.05
#define MINOR_SHARE 0.025
#define HUGE_PAGE (2.0 * 1024 * 1024)

/* The refaults counted from the memory touched and given back: the part
 * of it beyond the most ever resident, in the faults it took (a fault a
 * page, one a huge page), no more than the run took in all.  True when
 * that count is the larger. */
static bool refaults_of_touched(const struct mt_rule_input *in,
				double touched, double huge,
				struct mt_repetition *r)
{
	const struct mt_call_figures *f = in->f;
	if (touched <= 0)
		return false;
	huge = fmin(huge, touched);
	double page = (double)in->page_size;
	double beyond = fmax(0, touched - f->peak_rss), k = beyond / touched;
	double small_faults = (touched - huge) / page * k,
	       huge_faults = huge / HUGE_PAGE * k;
	double all = small_faults + huge_faults;
	double fit = all > f->faults && all > 0 ? f->faults / all : 1;
	r->touched = touched;
	r->touched_huge = huge;
	r->touched_beyond = beyond;
	r->touched_faults = all * fit;
	if (r->touched_faults <= r->explained)
		return false;
	r->explained = r->touched_faults;
	r->explained_small = small_faults * fit;
	r->explained_huge = huge_faults * fit;
	return true;
}

bool mt_repeats(const struct mt_rule_input *in, double cycles,
		double bytes_given_back, struct mt_repetition *r)
{
	return mt_repeats_touched(in, cycles, bytes_given_back, 0, 0, r);
}

bool mt_repeats_touched(const struct mt_rule_input *in, double cycles,
			double bytes_given_back, double touched, double huge,
			struct mt_repetition *r)
{
	const struct mt_call_figures *f = in->f;
	*r = (struct mt_repetition){.cycles = cycles};
	if (!f->whole)
		return cycles >= MT_CHURN_PER_CALL;

	double page = (double)in->page_size;
	r->given_back_pages = bytes_given_back / page;
	r->resident_pages = f->peak_rss / page;
	r->refaults = fmax(0, f->faults - r->resident_pages);
	/* (a thread heap's shrink is an madvise: among the purged bytes) */
	double all = f->brk_shrink_bytes + f->syscall_bytes[MT_SYS_MUNMAP] +
		     fmax(f->purged_bytes, f->thread_heap_shrink_bytes);
	double part = all > bytes_given_back && all > 0 ? bytes_given_back / all : 1;
	r->shared = part < 0.99;
	r->all_given_back_pages = fmax(all, bytes_given_back) / page;
	r->explained = fmin(r->refaults * part, r->given_back_pages);
	r->by_touch = refaults_of_touched(in, touched, huge, r);
	r->system_s = f->faults > 0 ? f->system_s * r->explained / f->faults : 0;
	/* Faults in transparent huge pages are few and each costs as much
	 * as some 150 of 4 KiB (measured here: 225 us, against 1.4): shared
	 * out by their count, a churn of new 10 to 45 MiB arrays each round
	 * (NumPy advises them for huge pages) got 3% of the CPU, where its
	 * setting saved 9 to 12% (new-user trial 27).  So the run's system
	 * time is shared by what the faults cost, the huge ones counted
	 * from the touched memory the unmappings gave back. */
	if (r->by_touch && r->explained_huge > 0 && in->page_fault_cost_s > 0 &&
	    in->huge_fault_cost_s > 0) {
		double huge_all = fmax(fmin(f->faults, (f->unmapped_touched_huge +
							f->purged_touched_huge) /
							       HUGE_PAGE),
				       r->explained_huge);
		double small_all = fmax(0, f->faults - huge_all);
		double mine = r->explained_small * in->page_fault_cost_s +
			      r->explained_huge * in->huge_fault_cost_s;
		double all = small_all * in->page_fault_cost_s +
			     huge_all * in->huge_fault_cost_s;
		if (all > 0)
			r->system_s = f->system_s * fmin(1, mine / all);
		r->weighed_by_cost = true;
	}
	/* No more than those faults can take: a run's system time is its
	 * own system calls' too (a program writing a file beside a scratch
	 * buffer mapped each round). */
	/* (a huge page's at the most one took here, which may be a
	 * compaction's: the least, twice, held a churn of NumPy arrays to
	 * half what its setting saved; new-user trial 27) */
	double most = r->by_touch && in->page_fault_cost_s > 0 &&
				      in->huge_fault_cost_s > 0
			      ? r->explained_small * in->page_fault_cost_s +
					r->explained_huge *
						fmax(in->huge_fault_cost_s,
						     in->huge_fault_most_s)
			      : r->explained * in->fault_cost_s;
	if (most > 0 && r->system_s > most) {
		r->system_s = most;
		r->capped = true;
	}
	r->cpu_s = f->user_s + f->system_s;
	r->share = r->cpu_s > 0 ? fmin(1, r->system_s / r->cpu_s) : 0;
	/* Capped, the faults took between what one costs here and twice
	 * that, the more where threads fault at once: a range, not its top
	 * (a producer thread's blocks freed by a consumer: 32-49% said,
	 * 11-14% saved, each fault 1.3 us against 1.5 measured; new-user
	 * trial 29).  (In huge pages the top is the most one took.) */
	if (r->capped && r->explained_huge <= 0) {
		r->system_s_least = most / 2;
		r->share_least = r->cpu_s > 0 ? fmin(1, r->system_s_least / r->cpu_s) : 0;
	}
	r->minor = r->share < MIN_SHARE;
	r->huge_pages = f->hugepage_advice > 0 && !r->by_touch;
	bool repeated = cycles >= MIN_CYCLES ||
			(cycles >= FEW_CYCLES && r->share >= FEW_CYCLES_SHARE);
	bool turned_over = repeated &&
			   r->given_back_pages >= MIN_TURNOVER * r->resident_pages;
	bool refaulted = r->refaults >= cycles || r->touched_faults >= cycles;
	/* With huge pages advised, a heap trimmed and regrown 24 times by
	 * 8x its peak took 27,188 faults against 27,642 pages resident, yet
	 * a quarter of its CPU was system time and the trim threshold took
	 * it from 0.25 s to 0.05 s (NumPy smoothing steps; new-user trial
	 * 11): one fault a 2 MiB page, the count shows nothing. */
	bool shown = turned_over && refaulted && r->share >= MINOR_SHARE;
	r->hidden_by_huge_pages = turned_over && !shown && r->touched <= 0 &&
				  f->hugepage_advice > 0 && r->cpu_s > 0 &&
				  f->system_s >= MIN_SHARE * r->cpu_s;
	return shown;
}

void mt_repetition_evidence(json_t *e, const struct mt_repetition *r)
{
	json_object_set_new(e, "cycles", json_real(r->cycles));
	json_object_set_new(e, "pages_given_back", json_real(r->given_back_pages));
	json_object_set_new(e, "peak_resident_pages", json_real(r->resident_pages));
	json_object_set_new(e, "faults_beyond_resident", json_real(r->refaults));
	json_object_set_new(e, "faults_explained", json_real(r->explained));
	json_object_set_new(e, "system_s_explained", json_real(r->system_s));
	json_object_set_new(e, "cpu_s", json_real(r->cpu_s));
	json_object_set_new(e, "share_of_run", json_real(r->share));
	if (r->touched > 0) {
		json_object_set_new(e, "touched_bytes_given_back",
				    json_real(r->touched));
		json_object_set_new(e, "huge_page_bytes_given_back",
				    json_real(r->touched_huge));
		json_object_set_new(e, "touched_bytes_beyond_resident",
				    json_real(r->touched_beyond));
		json_object_set_new(e, "faults_to_touch_again",
				    json_real(r->touched_faults));
	}
	if (r->by_touch)
		json_object_set_new(e, "faults_counted_from_touched_memory",
				    json_true());
	if (r->capped)
		json_object_set_new(e, "system_s_capped_by_fault_cost", json_true());
	if (r->system_s_least > 0) {
		json_object_set_new(e, "system_s_explained_least",
				    json_real(r->system_s_least));
		json_object_set_new(e, "share_of_run_least", json_real(r->share_least));
	}
	if (r->weighed_by_cost)
		json_object_set_new(e, "system_s_shared_by_fault_cost", json_true());
	if (r->huge_pages)
		json_object_set_new(e, "lower_bound_huge_pages", json_true());
	if (r->minor)
		json_object_set_new(e, "minor", json_true());
}

double mt_allocator_unmapped_bytes(const struct mt_call_figures *f)
{
	double mine = f->syscalls_by_allocator[MT_SYS_MUNMAP] +
		      f->syscalls_inferred[MT_SYS_MUNMAP];
	double all = fmax(f->syscalls[MT_SYS_MUNMAP], mine);
	/* (and what its mremap gave back of the chunks it shrank) */
	return (all > 0 ? f->syscall_bytes[MT_SYS_MUNMAP] * mine / all : 0) +
	       f->remap_shrink_bytes;
}

bool mt_call_churns(const struct mt_call_figures *f)
{
	return (f->brk_grow >= MT_CHURN_PER_CALL &&
		f->brk_shrink >= MT_CHURN_PER_CALL) ||
	       (f->syscalls[MT_SYS_MMAP] >= MT_CHURN_PER_CALL &&
		f->syscalls[MT_SYS_MUNMAP] >= MT_CHURN_PER_CALL) ||
	       f->syscalls_by_allocator[MT_SYS_MADVISE] >= MT_CHURN_PER_CALL ||
	       f->thread_heap_shrinks >= MT_CHURN_PER_CALL;
}

bool mt_run_churns(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	struct mt_repetition r;
	double unmaps = f->syscalls_by_allocator[MT_SYS_MUNMAP] +
			f->syscalls_inferred[MT_SYS_MUNMAP] + f->remap_shrink;
	return mt_repeats(in, f->brk_shrink, f->brk_shrink_bytes, &r) ||
	       mt_repeats_touched(in, unmaps, mt_allocator_unmapped_bytes(f),
				  f->unmapped_touched_by_allocator,
				  f->unmapped_touched_huge_by_allocator, &r) ||
	       mt_repeats_touched(in, f->syscalls_by_allocator[MT_SYS_MADVISE],
				  f->purged_bytes, f->purged_touched_by_allocator,
				  f->purged_touched_huge_by_allocator, &r) ||
	       mt_repeats(in, f->thread_heap_shrinks, f->thread_heap_shrink_bytes,
			  &r);
}

const char *mt_repetition_cost(const struct mt_call_figures *f,
			       const struct mt_repetition *r, const char *cause,
			       char *buf, size_t len)
{
	char b1[32], b2[32], b3[32], b4[32], cost[96];
	if (r->system_s_least > 0)
		snprintf(cost, sizeof cost,
			 "between %.2f and %.2f s of system time, %.0f%% to %.0f%%",
			 r->system_s_least, r->system_s, r->share_least * 100,
			 r->share * 100);
	else
		snprintf(cost, sizeof cost, "about %.2f s of system time, %.0f%%",
			 r->system_s, r->share * 100);
	if (r->by_touch)
		snprintf(buf, len,
			 "the process took %.0f page faults; of the memory %s "
			 "gave back, %s had been touched, %s of it in "
			 "transparent huge pages (one fault each 2 MiB), and %s "
			 "of it beyond the %s the process ever had resident at "
			 "once, which took about %.0f faults to touch again "
			 "(measured just before each was given back): %s of "
			 "the %.2f s of CPU the run took.",
			 f->faults, cause,
			 mt_format_bytes(r->touched, b1, sizeof b1),
			 mt_format_bytes(r->touched_huge, b2, sizeof b2),
			 mt_format_bytes(r->touched_beyond, b3, sizeof b3),
			 mt_format_bytes(f->peak_rss, b4, sizeof b4),
			 r->touched_faults, cost, r->cpu_s);
	else
		snprintf(buf, len,
			 "the process took %.0f page faults, %.0f more than the %.0f "
			 "pages it ever had resident at once, and %s gave back %.0f "
			 "pages, enough to account for %.0f of them%s: %s of the "
			 "%.2f s of CPU the run took.",
			 f->faults, r->refaults, r->resident_pages, cause,
			 r->given_back_pages, r->explained,
			 r->shared ? " (their part, as memory was also given back "
				     "by other means)"
				   : "",
			 cost, r->cpu_s);
	size_t at = strlen(buf);
	/* (in huge pages, the rest may be the churn's too: the kernel
	 * compacting memory into huge pages at their first touch, the
	 * unmappings freeing them; a setting saved twice the bound where
	 * NumPy's new arrays churned, new-user trial 27) */
	/* (glibc's mremaps of a buffer grown by realloc, a system call a
	 * step: the most of the rest, where there are many; new-user trial
	 * 42) */
	char calls[96] = "its own system calls";
	if (f->remap_grow >= 1)
		snprintf(calls, sizeof calls,
			 "system calls (the %.0f mremaps that grew its mapped "
			 "blocks among them)",
			 f->remap_grow);
	/* (with threads, the faults themselves may cost more than the
	 * bound: four threads of NumPy tiles on jemalloc, 1.22M faults and
	 * 13.3 s of system time, 0.2 s on tcmalloc, which purges none, where
	 * the bound said 3.05 s and "other work, such as its own system
	 * calls"; new-user trial 44) */
	char threads[200] = "";
	if (f->threads > 1)
		snprintf(threads, sizeof threads,
			 ", or to the churn's own faults, which cost more each "
			 "where %.0f threads take them at once (they share the "
			 "process's page tables and its lock on its memory map) "
			 "than the cost measured on one",
			 f->threads);
	if (r->capped && at < len)
		snprintf(buf + at, len - at,
			 " (At most what those faults can take, %s on this "
			 "machine: the rest of the run's "
			 "%.2f s of system time went to other work, such as "
			 "%s%s%s%s.)",
			 r->system_s_least > 0
				 ? "each from what one costs to twice that, the "
				   "more where threads fault at once,"
				 : "twice what one costs",
			 f->system_s, calls, threads,
			 r->explained_huge > 0
				 ? ", or to the churn's own in ways its faults "
				   "do not show (the kernel compacting memory "
				   "into huge pages at their first touch, the "
				   "unmappings freeing them), so that it may "
				   "cost more"
				 : "",
			 *threads || r->explained_huge > 0
				 ? ": --verify measures it"
				 : "");
	/* Uncapped, the faults' share is still a floor where they were in
	 * huge pages: fresh memory costs the program's own time too as it
	 * writes it (cold caches and TLB), which no fault count shows (a
	 * NumPy program of 32 MiB frames said 9%, and its setting saved
	 * 24% of the CPU; 8 MiB frames 9%, and 22%; new-user trial 40). */
	at = strlen(buf);
	if (!r->capped && r->explained_huge > 0 && at < len)
		snprintf(buf + at, len - at,
			 " In huge pages the churn may cost more than its faults' "
			 "share of the system time: the kernel compacting memory "
			 "for them, and the program writing fresh memory, cold "
			 "in the caches (user time); --verify measures it.");
	/* (the resident pages stand for the first touches: one fault each,
	 * but one a huge page where they were advised: a NumPy program's
	 * churn said 13% where a fix saved 31% of its CPU; new-user trial 4) */
	at = strlen(buf);
	if (f->whole && r->huge_pages && at < len)
		snprintf(buf + at, len - at,
			 " The count of the churn's faults is a lower bound: "
			 "the program advised memory "
			 "for transparent huge pages, whose first touch takes "
			 "one fault for 2 MiB, so fewer of its faults were first "
			 "touches than it had pages resident, and more of them "
			 "were the churn's.");
	/* (a page read before it is written faults twice, to the kernel's
	 * zero page, then to its own: a table calloc zeroed, looked up
	 * before it is filled, took 317k faults where its trims gave back
	 * 159k pages, and a setting that stopped them saved 76% of the run,
	 * where 31% was said; new-user trial 18) */
	at = strlen(buf);
	double unaccounted = r->refaults - r->all_given_back_pages;
	if (f->whole && !r->by_touch && !r->huge_pages &&
	    unaccounted > 0.5 * r->all_given_back_pages && at < len) {
		/* (and what they would cost: the time said was a third of
		 * what the fixes saved, np.zeros each batch on jemalloc,
		 * 0.57 s said, 1.1 s saved; new-user trial 35) */
		double upper_s = r->explained > 0
					 ? fmin(f->system_s, r->system_s *
							(r->explained + unaccounted) /
							r->explained)
					 : 0;
		snprintf(buf + at, len - at,
			 " The count of the churn's faults is a lower bound: "
			 "%.0f more faults beyond the "
			 "resident pages are more than all the memory given back "
			 "by any means accounts for, and a page read before it is "
			 "written takes two (one maps the kernel's zero page, the "
			 "next the page's own memory), which would make them the "
			 "churn's too%s",
			 unaccounted, upper_s > r->system_s ? "" : ".");
		at = strlen(buf);
		if (upper_s > r->system_s && at < len)
			snprintf(buf + at, len - at,
				 ": counted so, it takes up to %.2f s of system "
				 "time, %.0f%% of the CPU.",
				 upper_s, r->cpu_s > 0 ? 100 * upper_s / r->cpu_s : 0);
	}
	at = strlen(buf);
	/* (counted from a lower bound, below the bar is no verdict: a
	 * thread pool's NumPy temporaries in huge pages, 3% "minor", where
	 * its setting saved 7% and the code fix 10%; new-user trial 34) */
	if (r->minor && f->whole && r->huge_pages && at < len)
		snprintf(buf + at, len - at,
			 MT_MINOR_SAID "below the %.0f%% that makes a change "
			 "worth it as counted, but from a lower bound: the churn "
			 "may cost more (--verify measures what its fixes save; "
			 "said so that a run measured on either side of that bar "
			 "tells the " MT_MINOR_SAID_END,
			 MIN_SHARE * 100);
	else if (r->minor && at < len)
		snprintf(buf + at, len - at,
			 MT_MINOR_SAID "below the %.0f%% that makes a change "
			 "worth it, though the churn is there (said so that a "
			 "run measured on either side of that bar tells the "
			 MT_MINOR_SAID_END,
			 MIN_SHARE * 100);
	return buf;
}
