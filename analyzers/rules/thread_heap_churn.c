/* thread-heap-churn: glibc's threads allocate from heaps of their own
 * (thread arenas), which free() shrinks with madvise(MADV_DONTNEED) once
 * more than the trim threshold is free at their top, or deletes whole
 * (munmap) once a heap holds nothing; the next allocations grow them back
 * and the pages fault again.  The multithreaded form of heap-trim-churn,
 * with no brk at all. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

/* The top pad that keeps every heap once made: glibc's heap_trim deletes
 * a heap whose memory is all free only while that leaves the top pad
 * free below it, so a pad of a whole heap (64 MiB, HEAP_MAX_SIZE on
 * 64-bit) stops it, and a new heap is made that large at once, not grown
 * a page at a time. */
#define HEAP_BYTES (64ull << 20)

/* The trim threshold that stops the shrinking, with the mmap threshold
 * held where glibc had moved it (setting one stops glibc moving the
 * other).  One shrink gives back what is free at the top at that moment,
 * a part of what a burst of frees gives back: the threshold must cover
 * the burst, so it is sized from the most the program ever had live
 * (or twice one shrink, if more). */
static void threshold_fix(struct mt_finding *x, const struct mt_rule_input *in,
			  double per_shrink)
{
	/* (heaps deleted too, which no trim threshold stops: the top pad
	 * beside it; 4 threads of 96 MiB each round, 483k faults, 229k with
	 * the thresholds, 98k, the first touches, with the pad too) */
	bool pad = in->f->heaps_deleted >= 1;
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
		 "glibc.malloc.mmap_threshold=%.0f%s",
		 trim, mmap, pad ? ":glibc.malloc.top_pad=67108864" : "");
	snprintf(fix->text, sizeof fix->text,
		 "leave up to %s free at the top of each heap before giving it "
		 "back (the trim threshold, which thread heaps obey as the main "
		 "heap does), and keep the mmap threshold where glibc had moved "
		 "it (%s): setting either one stops glibc from adjusting the "
		 "other%s",
		 mt_format_bytes((double)trim, b1, sizeof b1),
		 mt_format_bytes(mmap, b2, sizeof b2),
		 pad ? "; and keep 64 MiB free at the top of each heap (the top "
		       "pad), without which glibc deletes a heap whole once "
		       "every block in it is freed, whatever the trim "
		       "threshold"
		     : "");
}

static void top_pad_fix(struct mt_finding *x)
{
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_SETTING);
	if (!fix)
		return;
	snprintf(fix->setting, sizeof fix->setting,
		 "GLIBC_TUNABLES=glibc.malloc.top_pad=%llu", HEAP_BYTES);
	snprintf(fix->text, sizeof fix->text,
		 "keep 64 MiB free at the top of each heap (the top pad): a "
		 "thread's heap is then never deleted, and each new one is made "
		 "whole, not grown a page at a time; the main heap also grows, "
		 "and keeps, 64 MiB at a time (address space: its pages are "
		 "taken only as they are used)");
}

/* glibc deleted its threads' heaps whole as their blocks were freed (no
 * trim threshold stops it) and made new ones: each grows by mprotect as
 * blocks are taken from it, and its pages fault anew.  4 threads of 200
 * MB of 1-7 KiB blocks each round took 839k faults for 170k pages
 * resident and 619k mprotect calls, 1.95 s of CPU against tcmalloc's
 * 0.74, and explain said nothing (new-user trial 28): the shrinks it
 * looks for are madvise's, the deletions munmap's, and a thread's last
 * frees (its cache, at its end, from inside glibc) delete heaps out of
 * the shim's sight.  So the deletions seen say the heaps go, and the
 * memory faulted in again beyond the most resident is what they cost. */
static struct mt_finding *heaps_deleted(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	struct mt_repetition r;
	char b1[32], cost[2 * MT_TEXT];
	double page = (double)in->page_size;
	double regrown = fmax(0, f->faults - f->peak_rss / page) * page;
	if (!f->whole || in->churns || f->heaps_deleted < 1 ||
	    !mt_repeats(in, f->heaps_deleted,
			fmax(f->heaps_deleted_bytes, regrown), &r))
		return NULL;
	struct mt_finding *x = mt_finding_new("thread-heap-churn", in);
	if (!x)
		return NULL;
	json_t *e = x->evidence;
	json_object_set_new(e, "thread_heaps_deleted", json_real(f->heaps_deleted));
	json_object_set_new(e, "thread_heap_bytes_deleted",
			    json_real(f->heaps_deleted_bytes));
	json_object_set_new(e, "mprotect_calls", json_real(f->syscalls[MT_SYS_MPROTECT]));
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	mt_repetition_evidence(e, &r);
	char grown[256] = "";
	if (f->syscalls[MT_SYS_MPROTECT] >= 2 * f->heaps_deleted)
		snprintf(grown, sizeof grown,
			 " (the kernel counted %.0f mprotect calls in the run, "
			 "the program's own among them)",
			 f->syscalls[MT_SYS_MPROTECT]);
	snprintf(x->explanation, sizeof x->explanation,
		 "Over the run, glibc deleted its threads' heaps whole, giving "
		 "their memory back to the kernel (munmap), %.0f times as "
		 "memtrace saw it, %s in all (more where a thread's last frees, "
		 "at its end, made them from inside glibc), and made new ones: "
		 "glibc gives each thread a heap of its own (a thread arena), "
		 "deletes a heap once every block in it is freed, whatever the "
		 "trim threshold, and grows a new one a little at a time, one "
		 "mprotect call each step%s, its pages fault on first touch. "
		 "So %s",
		 f->heaps_deleted,
		 mt_format_bytes(f->heaps_deleted_bytes, b1, sizeof b1), grown,
		 mt_repetition_cost(f, &r, "the heaps deleted", cost, sizeof cost));
	static const char *const gone[] = {"munmap_bytes", NULL};
	mt_finding_sites(x, in, gone);
	top_pad_fix(x);
	mt_backend_fixes(x, in->backend, 0, f);
	mt_reuse_fix(x, in, false);
	return x;
}

struct mt_finding *mt_rule_thread_heap_churn(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	double shrinks = f->thread_heap_shrinks;
	struct mt_repetition r;
	char b1[32], cost[2 * MT_TEXT];

	if (strcmp(in->backend, "glibc") != 0 || f->faults < 1)
		return NULL;
	if (!mt_repeats(in, shrinks, f->thread_heap_shrink_bytes, &r))
		return heaps_deleted(in);
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
	if (f->heaps_deleted >= 1) {
		json_object_set_new(e, "thread_heaps_deleted", json_real(f->heaps_deleted));
		mt_finding_append(x, " glibc also deleted its threads' heaps whole "
			 "(munmap) %.0f times as memtrace saw it, %s in all: once "
			 "every block in a heap is freed it goes, whatever the trim "
			 "threshold, and a new one grows a little at a time, one "
			 "mprotect call each step.",
			 f->heaps_deleted,
			 mt_format_bytes(f->heaps_deleted_bytes, b1, sizeof b1));
	}
	static const char *const shrunk[] = {"thread_heap_shrink_bytes", NULL};
	mt_finding_sites(x, in, shrunk);
	threshold_fix(x, in, per_shrink);
	mt_backend_fixes(x, in->backend, 0, f);
	mt_reuse_fix(x, in, false);
	return x;
}
