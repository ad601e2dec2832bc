/* thread-heap-churn: glibc's threads allocate from heaps of their own
 * (thread arenas), which free() shrinks with madvise(MADV_DONTNEED) once
 * more than the trim threshold is free at their top; the next allocations
 * grow them back and the pages fault again.  The multithreaded form of
 * heap-trim-churn, with no brk at all. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

/* The trim threshold that stops the shrinking, with the mmap threshold
 * held where glibc had moved it (setting one stops glibc moving the
 * other).  One shrink gives back what is free at the top at that moment,
 * a part of what a burst of frees gives back: the threshold must cover
 * the burst, so it is sized from the most the program ever had live
 * (or twice one shrink, if more). */
static void threshold_fix(struct mt_finding *x, const struct mt_rule_input *in,
			  double per_shrink)
{
	double mmap = fmax(128 * 1024, in->f->mmap_threshold);
	unsigned long long trim =
		mt_pow2_at_least(fmax(2 * per_shrink, in->f->peak_live));
	char b1[32], b2[32];
	/* (the program's own mallopt comes after any setting: the
	 * thresholds go in its call; glibc_fixes.c) */
	bool by_mallopt = in->f->thresholds_by_mallopt;
	struct mt_fix *fix = mt_fix_add(x, by_mallopt ? MT_FIX_CODE : MT_FIX_SETTING);
	if (!fix)
		return;
	if (by_mallopt) {
		snprintf(fix->text, sizeof fix->text,
			 "the program sets glibc's thresholds itself (mallopt), "
			 "which no GLIBC_TUNABLES setting undoes: in that call "
			 "leave up to %s free at the top of each heap before "
			 "giving it back (M_TRIM_THRESHOLD %llu), which thread "
			 "heaps obey as the main heap does",
			 mt_format_bytes((double)trim, b1, sizeof b1), trim);
		return;
	}
	snprintf(fix->setting, sizeof fix->setting,
		 "GLIBC_TUNABLES=glibc.malloc.trim_threshold=%llu:"
		 "glibc.malloc.mmap_threshold=%.0f",
		 trim, mmap);
	snprintf(fix->text, sizeof fix->text,
		 "leave up to %s free at the top of each heap before giving it "
		 "back (the trim threshold, which thread heaps obey as the main "
		 "heap does), and keep the mmap threshold where glibc had moved "
		 "it (%s): setting either one stops glibc from adjusting the "
		 "other",
		 mt_format_bytes((double)trim, b1, sizeof b1),
		 mt_format_bytes(mmap, b2, sizeof b2));
}

struct mt_finding *mt_rule_thread_heap_churn(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	double shrinks = f->thread_heap_shrinks;
	struct mt_repetition r;
	char b1[32], cost[768];

	if (strcmp(in->backend, "glibc") != 0 || f->faults < 1 ||
	    !mt_repeats(in, shrinks, f->thread_heap_shrink_bytes, &r))
		return NULL;
	struct mt_finding *x = mt_finding_new("thread-heap-churn", in);
	if (!x)
		return NULL;
	double per_shrink = f->thread_heap_shrink_bytes / shrinks;
	double share = mt_system_share(f);

	json_t *e = x->evidence;
	json_object_set_new(e, "thread_heap_shrinks_per_call", json_real(shrinks));
	json_object_set_new(e, "bytes_per_shrink", json_real(per_shrink));
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	json_object_set_new(e, "share_of_time", json_real(share));

	static const char mechanism[] =
		"glibc gives each thread a heap of its own (a thread arena); "
		"when more than the trim threshold is free at its top, free() "
		"hands the pages back to the kernel with madvise(MADV_DONTNEED), "
		"and the next allocations take them again: fresh pages, which "
		"fault on first touch";
	if (f->whole) {
		mt_repetition_evidence(e, &r);
		snprintf(x->explanation, sizeof x->explanation,
			 "Over the run, glibc shrank its threads' heaps %.0f "
			 "times, by %s each time on average, from inside "
			 "free(). %s: %s",
			 shrinks, mt_format_bytes(per_shrink, b1, sizeof b1),
			 mechanism,
			 mt_repetition_cost(f, &r, "the shrinks", cost,
					    sizeof cost));
	} else {
		snprintf(x->explanation, sizeof x->explanation,
			 "Each call of %s shrinks glibc's thread heaps %.2f "
			 "times, by %s each time, from inside free(). %s: %.0f "
			 "page faults per call, %.2f ms of system time, %.0f%% "
			 "of the call's %.2f ms.",
			 f->region, shrinks,
			 mt_format_bytes(per_shrink, b1, sizeof b1), mechanism,
			 f->faults, f->system_s * 1e3, share * 100,
			 f->time_median_s * 1e3);
	}
	static const char *const shrunk[] = {"thread_heap_shrink_bytes", NULL};
	mt_finding_sites(x, in, shrunk);
	threshold_fix(x, in, per_shrink);
	mt_backend_fixes(x, in->backend, 0, f);
	mt_reuse_fix(x, in, false);
	return x;
}
