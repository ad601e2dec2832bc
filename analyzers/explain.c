#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "format.h"
#include "sites.h"

struct mt_finding *mt_finding_new(const char *id, const struct mt_rule_input *in)
{
	struct mt_finding *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->id = id;
	f->region = in->f->region;
	f->backend = in->backend;
	f->evidence = json_object();
	return f;
}

void mt_finding_free(struct mt_finding *f)
{
	if (!f)
		return;
	json_decref(f->evidence);
	json_decref(f->sites);
	for (int i = 0; i < f->nfixes; i++)
		json_decref(f->fixes[i].verified);
	free(f);
}

struct mt_fix *mt_fix_add(struct mt_finding *f, int kind)
{
	if (f->nfixes == MT_MAX_FIXES)
		return NULL;
	struct mt_fix *x = &f->fixes[f->nfixes++];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	return x;
}

double mt_system_share(const struct mt_call_figures *f)
{
	double t = f->time_median_s;
	if (t <= 0)
		return 0;
	return f->system_s / t > 1 ? 1 : f->system_s / t;
}

unsigned long long mt_pow2_at_least(double n)
{
	unsigned long long p = 1;
	while ((double)p < n && p < (1ull << 62))
		p <<= 1;
	return p;
}

void mt_finding_sites(struct mt_finding *x, const struct mt_rule_input *in,
		      const char *const *keys)
{
	char label[512];
	/* Sites are the whole run's: a region's finding would be given
	 * code outside the region. */
	if (!in->f->whole || !in->sites)
		return;
	x->sites = mt_sites_ranked(in->sites, keys, 5);
	json_t *top = json_array_get(x->sites, 0);
	if (!top)
		return;
	size_t at = strlen(x->explanation);
	snprintf(x->explanation + at, sizeof x->explanation - at,
		 " %.0f%% of it comes from the blocks allocated at %s.",
		 json_number_value(json_object_get(top, "share")) * 100,
		 mt_site_label(json_object_get(top, "stack"), label, sizeof label));
	if (!mt_site_grows(top))
		return;
	json_t *large = json_object_get(top, "large");
	char lo[32], hi[32];
	at = strlen(x->explanation);
	snprintf(x->explanation + at, sizeof x->explanation - at,
		 " The blocks there grow: %.0f of its %.0f large allocations "
		 "were larger than the one before, from %s to %s, a buffer "
		 "grown step by step (realloc, a vector's push_back, a list or "
		 "string appended to), each step a new block for the allocator "
		 "to find room for and the kernel to fault in.",
		 json_number_value(json_object_get(large, "grows")),
		 json_number_value(json_object_get(large, "allocations")),
		 mt_format_bytes(json_number_value(json_object_get(large, "min_bytes")),
				 lo, sizeof lo),
		 mt_format_bytes(json_number_value(json_object_get(large, "max_bytes")),
				 hi, sizeof hi));
}
