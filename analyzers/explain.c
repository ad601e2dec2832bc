#include <math.h>
#include <stdarg.h>
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
	json_decref(f->small_sites);
	for (int i = 0; i < f->nfixes; i++)
		json_decref(f->fixes[i].verified);
	free(f->process);
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

/* The run's total of one of the sites' "caused" figures. */
static double run_total(const struct mt_call_figures *f, const char *key)
{
	if (!strcmp(key, "brk_grow_bytes"))
		return f->brk_grow_bytes;
	if (!strcmp(key, "brk_shrink_bytes"))
		return f->brk_shrink_bytes;
	if (!strcmp(key, "mmap_bytes"))
		return f->syscall_bytes[MT_SYS_MMAP];
	if (!strcmp(key, "munmap_bytes"))
		return f->syscall_bytes[MT_SYS_MUNMAP];
	if (!strcmp(key, "purge_bytes"))
		return f->purged_bytes;
	if (!strcmp(key, "thread_heap_shrink_bytes"))
		return f->thread_heap_shrink_bytes;
	return 0;
}

/* Sites are kept for large blocks only.  The memory the allocator moved
 * while one was allocated or freed can be far more than the block (a trim
 * that gives back a whole tree of small nodes when the last large array
 * among them is freed): the large blocks can account for at most as much
 * as went through them, allocated and freed.  That bound over what the
 * finding is about: how much of it the sites can stand for. */
static double large_blocks_bound(const struct mt_call_figures *f,
				 const char *const *keys)
{
	double moved = 0;
	for (size_t k = 0; keys[k]; k++)
		moved += run_total(f, keys[k]);
	double freed = f->large_allocs > 0
			       ? f->large_frees * f->large_bytes / f->large_allocs
			       : 0;
	double through = f->large_bytes + freed;
	return moved > through ? through / moved : 1;
}

void mt_finding_append(struct mt_finding *x, const char *fmt, ...)
{
	size_t at = strlen(x->explanation);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->explanation + at, sizeof x->explanation - at, fmt, ap);
	va_end(ap);
}

/* From a trace with fault samples: the faults that fell in the site's
 * blocks, measured, against the run's. */
static void say_site_faults(struct mt_finding *x, json_t *site,
			    const struct mt_call_figures *f)
{
	json_t *n = json_object_get(site, "faults");
	if (!n || f->faults < 1)
		return;
	double faults = (double)json_integer_value(n);
	char label[512];
	mt_finding_append(x, " The blocks allocated at %s took %.0f of the run's %.0f page "
		 "faults (%.0f%%, from the faults sampled in the trace, each put "
		 "on the block it fell in).",
		 mt_site_label(json_object_get(site, "stack"), label, sizeof label),
		 faults, f->faults, 100 * fmin(1, faults / f->faults));
}

/* Small blocks have no site each; a sample of them has (MEMTRACE_SITES):
 * where their bytes were allocated, said when the samples are enough to
 * tell (a site's share of 20 samples is within some 20 points). */
enum { SMALL_SAMPLES_ENOUGH = 20 };

bool mt_small_sites_said(json_t *sites, char *out, size_t size, json_t **top)
{
	char rate[80], label[512];
	double n = mt_sites_small_samples(sites, rate, sizeof rate);
	*top = NULL;
	if (n <= 0) {
		snprintf(out, size, " Their call sites were not sampled (MEMTRACE_SITES="
			 "large or off, or recorded before memtrace sampled them).");
		return false;
	}
	if (n < SMALL_SAMPLES_ENOUGH) {
		snprintf(out, size, " Only %.0f small blocks were sampled for their call "
			 "sites: too few to say where they come from.", n);
		return false;
	}
	*top = mt_sites_by_small(sites, 5);
	if (!json_array_size(*top)) {
		*out = '\0';
		return false;
	}
	/* The text names places, so sites that differ only further down
	 * their stacks count as one ("98% at enqueue (q.c:31), 2% at
	 * enqueue (q.c:31)" said nothing): the top label's shares summed,
	 * then the next label that differs. */
	char other[512] = "";
	double share = 0, other_share = 0;
	size_t i;
	json_t *site;
	mt_site_label(json_object_get(json_array_get(*top, 0), "stack"),
		      label, sizeof label);
	json_array_foreach(*top, i, site) {
		char this[512];
		double s = json_number_value(json_object_get(site, "share"));
		mt_site_label(json_object_get(site, "stack"), this, sizeof this);
		if (!strcmp(this, label))
			share += s;
		else if (!*other)
			snprintf(other, sizeof other, "%s", this);
		if (!strcmp(this, other))
			other_share += s;
	}
	int at = snprintf(out, size, " Sampled (about once in every %s of allocations, %.0f "
		 "samples), %.0f%% of the small blocks' bytes were allocated "
		 "at %s",
		 rate, n, share * 100, label);
	if (*other && at >= 0 && (size_t)at < size)
		at += snprintf(out + at, size - (size_t)at, ", %.0f%% at %s",
			       other_share * 100, other);
	if (at >= 0 && (size_t)at < size)
		snprintf(out + at, size - (size_t)at, ".");
	return true;
}

void mt_finding_small_sites(struct mt_finding *x, json_t *sites)
{
	char said[1400];
	json_t *top;
	mt_small_sites_said(sites, said, sizeof said, &top);
	x->small_sites = top;
	mt_finding_append(x, "%s", said);
}

/* "less than 1%", or "<qualifier> 45%". */

/* Where the blocks of the site labelled `label` (the first of x's sites
 * that reads so) are given back, when native code of the program's own
 * gives back most of them elsewhere than it makes them: the line that
 * hands the memory back, a shrinking realloc or a free before the next
 * round's block (a buffer grown, then cut back to 4 KiB each round:
 * new-user trial 29). */
static void say_released(struct mt_finding *x, const char *label)
{
	size_t i;
	json_t *site;
	char at[512], own[512];
	json_array_foreach(x->sites, i, site) {
		json_t *stack = json_object_get(site, "stack");
		if (strcmp(mt_site_label(stack, own, sizeof own), label))
			continue;
		if (mt_site_release_label(site, at, sizeof at))
			mt_finding_append(x, ", given back at %s", at);
		return;
	}
}

static const char *percent_words(double share, const char *qualifier,
				 char *buf, size_t len)
{
	if (share < 0.005)
		snprintf(buf, len, "less than 1%%");
	else
		snprintf(buf, len, "%s %.0f%%", qualifier, share * 100);
	return buf;
}

void mt_finding_sites(struct mt_finding *x, const struct mt_rule_input *in,
		      const char *const *keys)
{
	char label[512];
	/* (a region's: the sites of the code that ran in it) */
	if (!in->sites)
		return;
	x->sites = mt_sites_ranked(in->sites, keys, 5);
	/* The program's own mappings are credited to a site each, whatever
	 * their size: no bound. */
	bool own = !strncmp(keys[0], "own_", 4);
	double bound = own ? 1 : large_blocks_bound(in->f, keys);
	/* The sites' shares are of what was credited to a site; what the
	 * allocator did on its own time (a purge decided later, a trim after
	 * a small free) is the run's and no site's. */
	double run = 0;
	for (size_t k = 0; keys[k]; k++)
		run += run_total(in->f, keys[k]);
	double credited = mt_sites_total(in->sites, keys);
	/* (sites written before the figures were, by a process killed
	 * since: what they were credited then is not a share of the whole
	 * run's, so only their shares among themselves are told) */
	double covered = own || run <= 0 || in->sites_to_s > 0
				 ? 1
				 : fmin(1, credited / run);
	double scale = fmin(bound, covered);
	size_t i;
	json_t *site;
	json_array_foreach(x->sites, i, site) json_object_set_new(
		site, "share",
		json_real(json_number_value(json_object_get(site, "share")) * scale));
	/* A block allocated once and freed (a buffer kept all run, freed at
	 * exit) gave memory back once: part of the whole, not a place that
	 * churns, so not listed. */
	for (i = json_array_size(x->sites); !own && i-- > 0;)
		if (json_integer_value(json_object_get(json_object_get(
			    json_array_get(x->sites, i), "large"), "allocations")) < 2)
			json_array_remove(x->sites, i);
	json_t *top = json_array_get(x->sites, 0);
	char part[32];
	if (bound >= 0.5 && covered < 0.5) {
		mt_finding_append(x, " Of all of it, %s was done while a large block was "
			 "allocated or freed, where memtrace knows the code: the "
			 "allocator did the rest on its own time (a purge "
			 "decided later, a trim after small frees)%s",
			 percent_words(covered, "only", part, sizeof part),
			 top ? "; " : ".");
		if (!top)
			return;
		mt_site_label(json_object_get(top, "stack"), label, sizeof label);
		mt_finding_append(x, "%.0f%% at %s.",
			 json_number_value(json_object_get(top, "share")) * 100, label);
		return;
	}
	if (bound < 0.5) {
		x->small_blocks = true;
		mt_finding_append(x, " Blocks of 128 KiB or more, whose call sites memtrace "
			 "records, went through the allocator for %s of that "
			 "memory: the rest is smaller blocks, many of them freed "
			 "and allocated again together.",
			 percent_words(bound, "at most", part, sizeof part));
		mt_finding_small_sites(x, in->sites);
		return;
	}
	if (!top)
		return;
	if (own) {
		mt_finding_append(x, " %.0f%% of the %s is done at %s.",
			 json_number_value(json_object_get(top, "share")) * 100,
			 strstr(keys[0], "purge") ? "giving back"
						  : "mapping and unmapping",
			 mt_site_label(json_object_get(top, "stack"), label, sizeof label));
		return;
	}
	/* The sites by label: two that read the same (one line, calling
	 * one library function, which allocates in two places below it)
	 * are said as one, their shares together, as stat --by-site folds
	 * them. */
	size_t nsites = json_array_size(x->sites);
	char labels[5][512];
	double shares[5] = {0};
	size_t nlabels = 0;
	for (size_t k = 0; k < nsites && k < 5; k++) {
		json_t *site = json_array_get(x->sites, k);
		mt_site_label(json_object_get(site, "stack"), label, sizeof label);
		double share = json_number_value(json_object_get(site, "share"));
		size_t j = 0;
		while (j < nlabels && strcmp(labels[j], label))
			j++;
		if (j == nlabels) {
			snprintf(labels[nlabels], sizeof labels[0], "%s", label);
			shares[nlabels++] = 0;
		}
		shares[j] += share;
	}
	for (size_t k = 1; k < nlabels; k++) /* (heaviest first again) */
		for (size_t j = k; j > 0 && shares[j] > shares[j - 1]; j--) {
			double t = shares[j];
			shares[j] = shares[j - 1];
			shares[j - 1] = t;
			char swap[512];
			memcpy(swap, labels[j], sizeof swap);
			memcpy(labels[j], labels[j - 1], sizeof swap);
			memcpy(labels[j - 1], swap, sizeof swap);
		}
	mt_finding_append(x, " %.0f%% of it comes from the blocks allocated at %s",
		 shares[0] * 100, labels[0]);
	say_released(x, labels[0]);
	/* and the next sites, up to two, when they weigh as much or nearly:
	 * naming one of equal causes would send the reader to part of the
	 * fix (three buffers of a job, freed together) */
	for (size_t k = 1; k < 3 && k < nlabels; k++) {
		if (shares[k] < 0.5 * shares[0])
			break;
		mt_finding_append(x, ", %.0f%% from those at %s", shares[k] * 100, labels[k]);
	}
	if (in->sites_to_s > 0)
		mt_finding_append(x, " (of what the sites had been credited %.2f s "
				     "into the run, when they were last written)",
				  in->sites_to_s);
	mt_finding_append(x, ".");
	say_site_faults(x, top, in->f);
	if (!mt_site_grows(top))
		return;
	json_t *large = json_object_get(top, "large");
	json_t *reallocs = json_object_get(large, "reallocs");
	bool by_realloc = !reallocs || json_number_value(reallocs) >= 1;
	/* (a mapped block glibc grows in place with mremap is no new
	 * block: only its new pages are the kernel's to fault in) */
	bool remapped = by_realloc && in->f->realloc_moves >= 1 &&
			in->f->realloc_copied_bytes == 0 && !strcmp(in->backend, "glibc");
	char lo[32], hi[32];
	/* (the sizes asked for, where recorded: the usable ones round up) */
	json_t *asked = json_object_get(large, "min_requested_bytes");
	const char *min = asked ? "min_requested_bytes" : "min_bytes",
		   *max = asked ? "max_requested_bytes" : "max_bytes";
	mt_finding_append(x, " The blocks there grow: %.0f of its %.0f large allocations "
		 "were larger than the one before, from %s to %s, a buffer "
		 "grown step by step (realloc, a vector's push_back, a list, "
		 "string or array appended to), each step %s.",
		 mt_site_larger(top),
		 json_number_value(json_object_get(large, "allocations")),
		 mt_format_bytes(json_number_value(json_object_get(large, min)),
				 lo, sizeof lo),
		 mt_format_bytes(json_number_value(json_object_get(large, max)),
				 hi, sizeof hi),
		 remapped ? "more pages for the kernel to fault in"
			  : "a new block for the allocator to find room for and "
			    "the kernel to fault in");
	/* (the run's reallocs, said where the site's blocks are realloc's:
	 * an array concatenated to makes new ones, and the run's small
	 * reallocs are no part of it; a summary without the count says it) */
	if (in->f->realloc_moves >= 1 && by_realloc) {
		mt_finding_append(x, " Over the run realloc moved %.0f blocks to a new place, "
			 "the allocator copying %s for them%s.",
			 in->f->realloc_moves,
			 mt_format_bytes(in->f->realloc_copied_bytes, lo, sizeof lo),
			 !strcmp(in->backend, "glibc")
				 ? " (glibc moves a mapped block with mremap, "
				   "which copies nothing)"
				 : "");
	}
	/* (each step of a mapped block on glibc is a system call of its
	 * own: 307,068 mremaps for four buffers grown 4 KiB at a time to
	 * 300 MiB, and growing each by half its size took 44; new-user
	 * trial 42; not where the finding counted them already) */
	if (by_realloc && in->f->remap_grow >= 1 &&
	    !strstr(x->explanation, "(mremap)"))
		mt_finding_append(x, " glibc grew its mapped blocks in place %.0f "
				     "times, each a system call (mremap) of its own: "
				     "a buffer grown by a part of its size at a time "
				     "(a half, as a vector does) takes a few dozen.",
				  in->f->remap_grow);
}
