/* threshold: an allocator threshold the data shows crossed or moved; here
 * glibc's dynamic mmap threshold and the trim threshold that follows it. */
#include <stdio.h>
#include <string.h>

#include "rules.h"

struct mt_finding *mt_rule_threshold(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	char b1[32], b2[32], b3[32];

	if (!f->glibc_thresholds || f->large_allocs < 1)
		return NULL;
	double mmap = f->mmap_threshold, trim = f->trim_threshold;
	double raises = f->threshold_raises;
	bool dynamic = f->thresholds_dynamic;
	double block = f->large_bytes / f->large_allocs;
	if (dynamic && raises < 1)
		return NULL; /* nothing moved */
	/* Over a whole run, a threshold matters where memory churns (or
	 * may: a churn to be checked, as temporaries.c). */
	bool churns = !f->whole || mt_run_churns(in);
	if (!churns && !in->churn_to_check)
		return NULL;

	double mapped = f->syscalls_inferred[MT_SYS_MMAP];
	/* A raised threshold brings blocks to the heap: where most are still
	 * mapped (larger than it, or than the 32 MiB it can reach), it is
	 * not what their churn is about. */
	if (dynamic && mapped >= 0.5 * f->large_allocs)
		return NULL;
	struct mt_finding *x = mt_finding_new("threshold", in);
	if (!x)
		return NULL;
	x->on_checked_churn = !churns;
	json_t *e = x->evidence;
	json_object_set_new(e, "mmap_threshold", json_real(mmap));
	json_object_set_new(e, "trim_threshold", json_real(trim));
	json_object_set_new(e, "threshold_raises", json_real(raises));
	json_object_set_new(e, "dynamic", json_boolean(dynamic));
	json_object_set_new(e, "bytes_per_block", json_real(block));
	json_object_set_new(e, "blocks_mapped_per_call", json_real(mapped));
	json_object_set_new(e, "blocks_from_heap_per_call",
			    json_real(f->large_allocs - mapped));

	/* "as in func2 (0.50 of 2.00 per call)", or over a whole run "as in
	 * this run (10 of 915 in all)" */
	char where[256], counts[96];
	snprintf(where, sizeof where, "%s", f->whole ? "this run" : f->region);
	snprintf(counts, sizeof counts, f->whole ? "%.0f of %.0f in all" : "%.2f of %.2f per call",
		 mapped, f->large_allocs);
	/* (how many came from the heap, said as counted: "are now below it"
	 * of blocks that reached 45.8 MiB, past the 32 MiB the threshold can
	 * reach, 123 of 255 mapped, read as a contradiction; new-user trial
	 * 17) */
	if (dynamic)
		snprintf(x->explanation, sizeof x->explanation,
			 "glibc raised its mmap threshold %.0f times, to %s: it "
			 "does so each time the program frees a mapped block "
			 "larger than the threshold, and sets the trim threshold "
			 "to twice that, %s. Blocks below the threshold come from "
			 "the heap: of the large blocks (%s on average), as in "
			 "%s, %s were mapped (those larger than the threshold, "
			 "which rises to 32 MiB at most, or made before it rose), "
			 "the rest came from the heap, and the heap is trimmed "
			 "whenever more than %s is free at its top.",
			 raises, mt_format_bytes(mmap, b1, sizeof b1),
			 mt_format_bytes(trim, b2, sizeof b2),
			 mt_format_bytes(block, b3, sizeof b3), where, counts,
			 mt_format_bytes(trim, b2, sizeof b2));
	else
		snprintf(x->explanation, sizeof x->explanation,
			 "glibc's thresholds are fixed by %s (mmap %s, trim "
			 "%s) and do not adapt: blocks of %s, as in %s, are %s "
			 "(%s are mapped).",
			 f->thresholds_by_mallopt ? "the program's own mallopt call"
						  : "a setting",
			 mt_format_bytes(mmap, b1, sizeof b1),
			 mt_format_bytes(trim, b2, sizeof b2),
			 mt_format_bytes(block, b3, sizeof b3), where,
			 block >= mmap ? "mapped and unmapped on every use"
				       : "served from the heap",
			 counts);
	/* A setting where the memory churns: a region whose calls do not
	 * give memory back gains nothing from one (new-user trial 7: its
	 * three temporaries a call, the setting proposed, 1.72 s of wall
	 * time without it, 1.89 s with) */
	if (strcmp(in->backend, "glibc") == 0 && (f->whole || mt_call_churns(f)))
		mt_glibc_threshold_fixes(x, f, in->page_size);
	return x;
}
