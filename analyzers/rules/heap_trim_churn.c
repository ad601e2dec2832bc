/* heap-trim-churn: the program break grows and shrinks back, call after
 * call (or again and again over a run), and the regrown pages fault
 * again. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../sites.h"
#include "rules.h"

/* The program's own malloc_trim calls made some of the trims (glibc's
 * malloc_trim gives back what is free whatever the trim threshold):
 * said, with their part. */
static void malloc_trim_part(struct mt_finding *x,
			     const struct mt_call_figures *f)
{
	if (f->trim_shrinks <= 0)
		return;
	json_t *e = x->evidence;
	json_object_set_new(e, "malloc_trim_calls_per_call",
			    json_real(f->trim_calls));
	json_object_set_new(e, "shrinks_by_malloc_trim_per_call",
			    json_real(f->trim_shrinks));
	mt_finding_append(x, " %.0f%% of the trims (%.*f of %.*f%s) were made by the "
		 "program's own calls of malloc_trim (%.*f calls), which give "
		 "back what is free at the top of the heap whatever the trim "
		 "threshold says.",
		 100 * fmin(1, f->trim_shrinks / f->brk_shrink),
		 f->whole ? 0 : 2, f->trim_shrinks, f->whole ? 0 : 2,
		 f->brk_shrink, f->whole ? "" : " per call",
		 f->whole ? 0 : 2, f->trim_calls);
}

static void malloc_trim_fix(struct mt_finding *x,
			    const struct mt_rule_input *in)
{
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_CODE);
	if (fix)
		snprintf(fix->text, sizeof fix->text,
			 "call malloc_trim less often%s: once the work that "
			 "frees is done, not each time round it, so the memory "
			 "given back is not what the next round asks for again",
			 in->python ? " (from Python through ctypes)" : "");
}

struct mt_finding *mt_rule_heap_trim_churn(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	struct mt_repetition r;
	char b1[32], cost[2 * MT_TEXT];

	if (f->brk_grow < MT_CHURN_PER_CALL)
		return NULL;
	bool churns = mt_repeats(in, f->brk_shrink, f->brk_shrink_bytes, &r);
	bool to_check = !churns && f->whole && r.hidden_by_huge_pages;
	if (!churns && !to_check)
		return NULL;
	struct mt_finding *x = mt_finding_new("heap-trim-churn", in);
	if (!x)
		return NULL;
	double per_trim = f->brk_shrink_bytes / f->brk_shrink;
	double pages = f->brk_grow_bytes / (double)in->page_size;
	double share = mt_system_share(f);

	json_t *e = x->evidence;
	json_object_set_new(e, "brk_grow_per_call", json_real(f->brk_grow));
	json_object_set_new(e, "brk_shrink_per_call", json_real(f->brk_shrink));
	json_object_set_new(e, "bytes_per_shrink", json_real(per_trim));
	json_object_set_new(e, "pages_regrown_per_call", json_real(pages));
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	json_object_set_new(e, "time_s_per_call", json_real(f->time_median_s));
	json_object_set_new(e, "share_of_time", json_real(share));
	json_object_set_new(e, "syscall_source",
			    json_string(f->kernel ? "kernel" : "inferred"));

	/* (the program's own malloc_trim, not free, where it made nearly
	 * every trim) */
	bool by_trim_calls = f->trim_shrinks > 0 &&
			     (f->trim_shrinks >= 0.9 * f->brk_shrink ||
			      /* (called each round: it gives back what a
			       * threshold would keep; 300 calls, 600 trims,
			       * the setting "no clear effect", faults
			       * 1,609,065 -> 1,608,765; new-user trial 23) */
			      f->trim_calls >= 0.5 * f->brk_shrink);
	const char *mechanism =
		by_trim_calls
			? "The program's calls of malloc_trim give what is free at "
			  "the top of the heap back to the kernel, and the "
			  "allocations that follow ask for it again. The kernel "
			  "hands back fresh pages, which fault on first touch"
			: "When more than the trim threshold is free at the top of "
			  "the heap, free() gives it back to the kernel, and the "
			  "allocations that follow ask for it again. The kernel "
			  "hands back fresh pages, which fault on first touch";
	if (to_check) {
		mt_repetition_evidence(e, &r);
		/* (what the faults would explain: nothing they can show) */
		static const char *const by_faults[] = {
			"faults_explained", "system_s_explained", "share_of_run",
			"minor", "lower_bound_huge_pages", NULL};
		for (const char *const *k = by_faults; *k; k++)
			json_object_del(e, *k);
		json_object_set_new(e, "hidden_by_huge_pages", json_true());
		json_object_set_new(e, "system_share_of_cpu",
				    json_real(f->system_s / r.cpu_s));
		x->check_by_fix = true;
		snprintf(x->explanation, sizeof x->explanation,
			 "Over the run, the heap grew %.0f times and was trimmed "
			 "back %.0f times (brk), by %s each time on average: %.0f "
			 "pages given back, %.1f times the most it ever had "
			 "resident (%.0f). %s. The program advised its memory for "
			 "transparent huge pages (NumPy does for its arrays), where "
			 "one fault brings in 2 MiB, so its %.0f page faults cannot "
			 "show whether the memory given back was faulted in again; "
			 "%.3f s of the run's %.3f s of CPU was system time. "
			 "memtrace ran the command again with the setting below to "
			 "tell.",
			 f->brk_grow, f->brk_shrink,
			 mt_format_bytes(per_trim, b1, sizeof b1),
			 r.given_back_pages,
			 r.given_back_pages / fmax(1, r.resident_pages),
			 r.resident_pages, mechanism, f->faults, f->system_s,
			 r.cpu_s);
	} else if (f->whole) {
		mt_repetition_evidence(e, &r);
		snprintf(x->explanation, sizeof x->explanation,
			 "Over the run, the heap grew %.0f times and was trimmed "
			 "back %.0f times (brk), by %s each time on average. "
			 "%s: %s",
			 f->brk_grow, f->brk_shrink,
			 mt_format_bytes(per_trim, b1, sizeof b1), mechanism,
			 mt_repetition_cost(f, &r, "the trims", cost,
					    sizeof cost));
	} else {
		snprintf(x->explanation, sizeof x->explanation,
			 "Each call of %s grows the heap %.2f times and shrinks "
			 "it back %.2f times (brk), by %s each time. %s: %.0f "
			 "pages regrown and %.0f page faults per call, %.2f ms "
			 "of system time, %.0f%% of the call's %.2f ms.",
			 f->region, f->brk_grow, f->brk_shrink,
			 mt_format_bytes(per_trim, b1, sizeof b1), mechanism,
			 pages, f->faults, f->system_s * 1e3, share * 100,
			 f->time_median_s * 1e3);
	}
	malloc_trim_part(x, f);
	/* By the growth each site's blocks needed and the trims their frees
	 * gave back: a trim's bytes are shared by the large blocks freed on
	 * the heap since the last one, by their bytes (shim/sites.c's
	 * ledger; before it, a trim was the one free's that set it off, and
	 * a 2 MiB astype freed last took 54% of a chain of 8 MiB temporaries
	 * whose own fix removed 94% of the faults, so growth alone was
	 * counted, and a report's copy that every trim followed was never
	 * named). */
	static const char *const moved[] = {"brk_grow_bytes", "brk_shrink_bytes",
					    NULL};
	static const char *const grown[] = {"brk_grow_bytes", NULL};
	mt_finding_sites(x, in, mt_sites_share_shrinks(in->sites) ? moved : grown);
	/* (a trim threshold does not decide malloc_trim's trims: where they
	 * are nearly all of them, no threshold is proposed; where free made
	 * a tenth or more, the threshold is proposed after the calls, for
	 * those: 60 calls each round made 60 of 120 trims, and with the calls
	 * gone the faults fell by half, with the threshold too by 98%;
	 * new-user trial 27) */
	bool glibc = strcmp(in->backend, "glibc") == 0;
	if (glibc && !by_trim_calls)
		mt_glibc_threshold_fixes(x, f, in->page_size);
	if (f->trim_shrinks > 0)
		malloc_trim_fix(x, in);
	if (glibc && by_trim_calls && f->trim_shrinks < 0.9 * f->brk_shrink) {
		int before = x->nfixes;
		mt_glibc_threshold_fixes(x, f, in->page_size);
		for (int i = before; i < x->nfixes; i++) {
			struct mt_fix *fix = &x->fixes[i];
			size_t n = strlen(fix->text);
			snprintf(fix->text + n, sizeof fix->text - n,
				 "; for the %.*f trims free() made%s, once "
				 "malloc_trim is called less often: while it is "
				 "called each round it gives back what the "
				 "threshold keeps",
				 f->whole ? 0 : 2, f->brk_shrink - f->trim_shrinks,
				 f->whole ? "" : " per call");
		}
	}
	mt_backend_fixes(x, in->backend, 0, f);
	/* (a whole run: what its top site's function had live at once, not
	 * the process's most, which counts every function's blocks) */
	json_t *top = json_array_get(x->sites, 0);
	double live = f->whole && top ? (double)mt_site_live_in_function(top)
				      : f->large_max_live;
	mt_reuse_fix(x, in, mt_in_place_fits(live));
	return x;
}
