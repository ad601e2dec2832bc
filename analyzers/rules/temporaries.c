/* temporaries: large short-lived allocations in a region, how many live at
 * once, and who frees them. */
#include <stdio.h>

#include "rules.h"

struct mt_finding *mt_rule_temporaries(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	char b1[32], b2[32];

	/* A temporary is short-lived within a unit of work: a call of a
	 * region.  A run without regions has no such unit. */
	if (f->large_allocs < 1 || f->whole)
		return NULL;
	struct mt_finding *x = mt_finding_new("temporaries", in);
	if (!x)
		return NULL;
	double size = f->large_bytes / f->large_allocs;
	bool freed_inside = f->large_frees >= 0.9 * f->large_allocs;

	json_t *e = x->evidence;
	json_object_set_new(e, "large_per_call", json_real(f->large_allocs));
	json_object_set_new(e, "bytes_per_block", json_real(size));
	json_object_set_new(e, "bytes_per_call", json_real(f->large_bytes));
	json_object_set_new(e, "max_live", json_real(f->large_max_live));
	json_object_set_new(e, "frees_per_call", json_real(f->large_frees));
	json_object_set_new(e, "min_size", json_integer(128 * 1024));

	snprintf(x->explanation, sizeof x->explanation,
		 "Each call of %s allocates %.2f large blocks of about "
		 "%s (%s per call)%s; at most %.0f of them are live at "
		 "the same time%s.",
		 f->region, f->large_allocs,
		 mt_bytes_text(size, b1, sizeof b1),
		 mt_bytes_text(f->large_bytes, b2, sizeof b2),
		 freed_inside ? " and frees them before it returns, so "
				"they are temporaries"
			      : ", and frees fewer than it allocates in "
				"the call",
		 f->large_max_live,
		 f->large_max_live >= 2
			 ? ", so the call needs that much more memory "
			   "than one buffer: the allocator must find "
			   "room for each anew"
			 : "");
	mt_reuse_fix(x, in, f->large_max_live >= 2);
	return x;
}
