/* Whether zeroing calloc's blocks whole outweighs a churn of them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "copy_cost.h"
#include "rules.h"

/* Blocks from calloc that churn (rules.h): a fresh mapping (or jemalloc's
 * purge, which has the kernel zero them) comes zeroed, and only the pages
 * the program touches fault; an allocator that keeps a freed block
 * (glibc's thresholds, tcmalloc, mimalloc's reserve) must zero the whole
 * of it at each calloc instead.  Zeroing at
 * memset's speed is the least that takes (measured on a resident buffer:
 * 0.025 ns a byte here, where glibc's calloc zeroing a reused 64 MiB
 * block took 0.035-0.045).  np.zeros of 64 MiB a frame, a small region
 * of it written, 300 frames: glibc with the thresholds 1.0 -> 1.6 s of
 * CPU, tcmalloc 0.93 -> 1.65, mimalloc with its reserve 1.02 -> 1.46,
 * while keeping the array and clearing the region written took the
 * faults away (new-user trial 45; tests/programs/sparse_grids.c: 0.5 s
 * bare, 0.7-0.9 with the thresholds, 0.15 kept and cleared).  Where that
 * least zeroing is more than the churn costs, keeping the blocks is not
 * proposed; from half of it, only to try. */
enum mt_zeroing mt_calloc_zeroing(struct mt_finding *x,
				  const struct mt_rule_input *in,
				  const struct mt_repetition *r, bool said,
				  bool code_fix)
{
	const struct mt_call_figures *f = in->f;
	double zero_s = f->calloc_bytes * mt_zero_cost_s();
	if (f->large_bytes <= 0 || f->calloc_bytes < 0.5 * f->large_bytes ||
	    zero_s <= 0 || zero_s < 0.5 * r->system_s)
		return MT_ZEROING_NONE;
	bool outweighs = zero_s >= r->system_s;
	char b1[32], b2[32];
	json_object_set_new(x->evidence, "calloc_bytes", json_real(f->calloc_bytes));
	json_object_set_new(x->evidence, "zeroing_s_least", json_real(zero_s));
	if (!said)
		mt_finding_append(x, " Its large blocks come from calloc (%s of "
				  "the %s):",
				  mt_format_bytes(f->calloc_bytes, b1, sizeof b1),
				  mt_format_bytes(f->large_bytes, b2, sizeof b2));
	mt_finding_append(x,
		" %s comes zeroed from the kernel, and only the pages the "
		"program touches fault, where an allocator that kept a freed "
		"block would have to zero all of it at each calloc: at this "
		"machine's memset speed (%.3f ns a byte, measured) at least "
		"%.2f s, %s the churn's %.2f s. %s",
		said ? "A block whose pages were given back" : "A fresh mapping",
		mt_zero_cost_s() * 1e9, zero_s,
		outweighs ? "more than" : "against", r->system_s,
		outweighs ? "So no setting or allocator that keeps the blocks "
			    "is proposed."
			  : "So those that keep the blocks may cost as much as "
			    "they save: they are offered to try, for --verify "
			    "to measure.");
	struct mt_fix *fix = code_fix ? mt_fix_add(x, MT_FIX_CODE) : NULL;
	if (fix)
		snprintf(fix->text, sizeof fix->text,
			 "keep the block and, after each use, clear only the "
			 "part that was written, instead of asking calloc for a "
			 "zeroed one each time%s; or allocate only the part that "
			 "is used",
			 in->numpy
				 ? " (with NumPy: make the array once with "
				   "np.zeros, and set the region written back to "
				   "zero, a[rows, cols] = 0, where np.zeros made a "
				   "new one)"
				 : "");
	/* (first: the fixes said before it would zero the block whole) */
	if (fix && x->nfixes > 1) {
		struct mt_fix first = *fix;
		memmove(&x->fixes[1], &x->fixes[0],
			(size_t)(x->nfixes - 1) * sizeof *x->fixes);
		x->fixes[0] = first;
	}
	return outweighs ? MT_ZEROING_OUTWEIGHS : MT_ZEROING_WEIGHS;
}
