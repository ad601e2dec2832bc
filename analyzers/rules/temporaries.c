/* temporaries: large short-lived allocations in a region, how many live at
 * once, and who frees them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../sites.h"
#include "rules.h"

/* The function a site's own frame is in, as "function file"; "" where
 * the frame is not named (each such site apart). */
static const char *function_key(json_t *site, char *buf, size_t len)
{
	json_t *stack = json_object_get(site, "stack");
	json_t *own = json_array_get(stack, mt_site_own_frame(stack));
	const char *function = json_string_value(json_object_get(own, "function"));
	snprintf(buf, len, "%s %s", function ?: "",
		 json_string_value(json_object_get(own, "file")) ?: "");
	return function ? buf : "";
}

/* The sizes asked for of a site's large blocks, smallest and largest. */
static void block_sizes(json_t *site, double *lo, double *hi)
{
	json_t *large = json_object_get(site, "large");
	/* (as the shim saw them; "963.8 KiB to 15.1 MiB" was said of
	 * arrays of 1 MiB to 16 MiB, the usable sizes scaled by the site's
	 * mean rounding; new-user trial 37) */
	json_t *min = json_object_get(large, "min_requested_bytes");
	if (min) {
		*lo = json_number_value(min);
		*hi = json_number_value(json_object_get(large, "max_requested_bytes"));
		return;
	}
	*lo = json_number_value(json_object_get(large, "min_bytes"));
	*hi = json_number_value(json_object_get(large, "max_bytes"));
	/* (before those were recorded: the usable sizes, rounded up to the
	 * allocator's classes, in the sizes asked for, as the mean is said,
	 * or jemalloc's "12.0 MiB to 48.0 MiB" stood beside "about 45.8 MiB"
	 * for the same arrays; new-user trial 28) */
	double asked = json_number_value(json_object_get(large, "requested_bytes")),
	       usable = json_number_value(json_object_get(large, "bytes"));
	if (asked > 0 && usable >= asked) {
		*lo *= asked / usable;
		*hi *= asked / usable;
	}
}

/* Do other lines of the function `key` make blocks, and none within
 * twice the size of the site's?  Its function's count of blocks live at
 * once is of all its lines: two where one would do is that many buffers
 * of a size only where the others are about as large (a 48 MiB frame
 * beside a 1-3 MiB tile was "2 live at once ... 2 times the memory of one
 * buffer", and writing into a buffer already there proposed, where one
 * frame was ever live; new-user trial 37). */
static bool others_unlike(json_t *sites, json_t *site, const char *key)
{
	bool others = false;
	double lo, hi;
	block_sizes(site, &lo, &hi);
	size_t i;
	json_t *other;
	json_array_foreach(sites, i, other) {
		char k[512];
		double olo, ohi;
		/* (the ranked list holds copies: the site itself by its
		 * stack and region) */
		json_t *r0 = json_object_get(site, "region"), *r1 = json_object_get(other, "region");
		if (json_equal(json_object_get(other, "stack"), json_object_get(site, "stack")) &&
		    (r0 == r1 || (r0 && r1 && json_equal(r0, r1))))
			continue;
		if (strcmp(function_key(other, k, sizeof k), key))
			continue;
		block_sizes(other, &olo, &ohi);
		if (ohi >= lo / 2 && olo <= 2 * hi)
			return false;
		others = true;
	}
	return others;
}

/* A run without regions: the sites whose large blocks are freed again,
 * by bytes, with the most live at once in the function that allocates
 * them (two where one would do is what a temporary kept alive costs). */
static struct mt_finding *by_site(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	char b1[32], b2[32], label[512];
	/* (a churn its figures cannot show, checked by a run with its
	 * setting, counts: NumPy's 17 MiB temporaries in huge pages were
	 * said on jemalloc and mimalloc and not on glibc, whose heap-trim
	 * churn was checked so; new-user trial 50) */
	bool churns = mt_run_churns(in);
	if (f->large_allocs < 10 || f->large_frees < 0.9 * f->large_allocs ||
	    (!churns && !in->churn_to_check))
		return NULL;
	json_t *all = mt_sites_by_bytes(in->sites, 5), *sites = json_array();
	size_t i;
	json_t *site;
	json_array_foreach(all, i, site) {
		json_t *large = json_object_get(site, "large");
		double n = (double)json_integer_value(json_object_get(large, "allocations"));
		double freed = (double)json_integer_value(json_object_get(large, "frees"));
		/* and made again: twice as many as were ever live at once
		 * (threads' buffers kept for their whole life, 32 made, 32
		 * live, were called temporaries: new-user trial 13), and
		 * twice as many as each thread could have made once, at the
		 * most one thread had live in the function (the same two
		 * threads run one after the other on a busy machine: 16
		 * live at once) */
		double most = (double)json_integer_value(json_object_get(large, "max_live"));
		double each = (double)json_integer_value(
			json_object_get(large, "max_live_in_function"));
		if (n >= 10 && freed >= 0.9 * n && n >= 2 * most &&
		    n >= 2 * fmax(f->threads, 1) * each)
			json_array_append(sites, site);
	}
	json_decref(all);
	if (!json_array_size(sites)) {
		json_decref(sites);
		return NULL;
	}
	struct mt_finding *x = mt_finding_new("temporaries", in);
	if (!x) {
		json_decref(sites);
		return NULL;
	}
	x->on_checked_churn = !churns;
	x->sites = sites;
	json_t *e = x->evidence;
	json_object_set_new(e, "large_per_call", json_real(f->large_allocs));
	json_object_set_new(e, "frees_per_call", json_real(f->large_frees));
	json_object_set_new(e, "min_size", json_integer(128 * 1024));
	/* (a buffer resized by realloc is one to the program, a block at
	 * each step to the allocator: "1,212,422 large blocks" of a str
	 * grown by += said nothing of it; new-user trial 17) */
	double resized = 0;
	json_array_foreach(in->sites, i, site) resized += json_number_value(
		json_object_get(json_object_get(site, "large"), "reallocs"));
	char steps[128] = "";
	if (f->whole && resized >= 0.5 * f->large_allocs)
		snprintf(steps, sizeof steps,
			 " (%.0f of them steps of buffers resized by realloc)",
			 resized);
	snprintf(x->explanation, sizeof x->explanation,
			  "Over the run, the program allocated %.0f large blocks%s "
			  "and freed %.0f of them. Where most are made, and the "
			  "most of them one thread had live at once in the "
			  "function that makes them (a block it returned counts "
			  "while it lives):",
			  f->large_allocs, steps, f->large_frees);
	bool two = false;
	json_int_t few = 0; /* the most live where a call holds them */
	char few_at[512] = ""; /* and where, among several sites */
	json_int_t kept = 0; /* the most live where more than a call needs */
	/* A function's figure is said once, at its first line, the most of
	 * its sites' ("... top level (all its lines' blocks together): 4"
	 * after each of a script's lines, some 5, some 4, as each site saw
	 * it when it allocated: new-user trial 25).  By function and file:
	 * the most, then (once said) null. */
	json_t *function_live = json_object();
	json_array_foreach(sites, i, site) {
		char key[512];
		json_int_t live = mt_site_live_in_function(site);
		if (!*function_key(site, key, sizeof key) ||
		    others_unlike(in->sites, site, key))
			continue;
		json_t *prev = json_object_get(function_live, key);
		if (!prev || json_integer_value(prev) < live)
			json_object_set_new(function_live, key, json_integer(live));
	}
	/* The same figure weighs each of its lines: the most ("top level:
	 * 5", then "where 2 are live at once, it needs 2 times the memory",
	 * a line's own view when it allocated; new-user trial 37). */
	json_t *function_most = json_deep_copy(function_live);
	json_array_foreach(sites, i, site) {
		json_t *large = json_object_get(site, "large");
		double n = (double)json_integer_value(json_object_get(large, "allocations"));
		double freed = (double)json_integer_value(json_object_get(large, "frees"));
		/* (a function inlined into another: the line's own count,
		 * never two where the function had one: sites.h) */
		json_int_t live = mt_site_live_in_function(site);
		const char *holder = mt_site_holder(json_object_get(site, "stack"));
		char key[512];
		/* (its function's other blocks far from its size: the line's
		 * own count) */
		bool alone = !holder && *function_key(site, key, sizeof key) &&
			     others_unlike(in->sites, site, key);
		if (alone) {
			json_int_t here = json_integer_value(json_object_get(large, "max_live"));
			live = here < live ? here : live;
		} else if (!holder && *key) {
			json_t *most = json_object_get(function_most, key);
			if (most)
				live = json_integer_value(most);
		}
		double bytes = json_number_value(json_object_get(site, "value"));
		double elsewhere = (double)json_integer_value(
			json_object_get(large, "freed_elsewhere"));
		/* Blocks handed to another thread, which frees them: live
		 * in a queue, not two in the function where one would do. */
		bool handed = elsewhere >= 0.5 * freed;
		if (mt_in_place_fits((double)live) && !handed)
			two = true;
		/* (the function with the most: the script's top level with 3
		 * was said where score() had 4; new-user trial 38) */
		if (mt_call_holds((double)live) && !handed) {
			if (live > few) {
				few = live;
				mt_site_label(json_object_get(site, "stack"), few_at,
					      sizeof few_at);
				/* (the count is the top level's, all its
				 * lines': "At <module> (np_concat.py:6),
				 * where 3 are live" was read as that line's,
				 * which had one; new-user trial 35) */
				json_t *st = json_object_get(site, "stack");
				const char *fn = json_string_value(json_object_get(
					json_array_get(st, mt_site_own_frame(st)), "function"));
				if (fn && !strcmp(fn, "<module>"))
					snprintf(few_at, sizeof few_at,
						 "the script's top level");
			}
		}
		/* (more than an expression makes: each operation of a NumPy
		 * expression is a temporary, with its operands live too, so a
		 * call of a few lines has 4 or 5 at once; "outlive the call"
		 * was said of those: new-user trial 6) */
		if (!handed && live > 8 && live > kept)
			kept = live;
		/* (a buffer grown by realloc is one block to the program,
		 * a new one at each step that moved it to the allocator: "1.2
		 * million large blocks" of a program that grew 6: trial 8) */
		double reallocs = (double)json_integer_value(
			json_object_get(large, "reallocs"));
		char by_realloc[96] = "";
		if (reallocs >= 0.5 * n)
			snprintf(by_realloc, sizeof by_realloc,
				 " (%.0f of them by realloc, each step of a "
				 "buffer resized)",
				 reallocs);
		/* (a script's top level is one function to Python: its
		 * lines' blocks together; "at most 3 in its function" was
		 * read as the line's own; new-user trial 24) */
		json_t *stack = json_object_get(site, "stack");
		const char *own = json_string_value(json_object_get(
			json_array_get(stack, mt_site_own_frame(stack)), "function"));
		const char *live_in =
			holder ? "at most live at once at that line (its "
				 "function is inlined into another):"
			: alone ? "at most live at once at that line (its "
				  "function's other lines make blocks of "
				  "other sizes):"
			: own && !strcmp(own, "<module>")
				? "at most live at once in the script's top "
				  "level (all its lines' blocks together):"
				: "at most live at once in its function:";
		json_t *most = holder || handed || alone ? NULL
				: json_object_get(function_live,
						  function_key(site, key, sizeof key));
		bool said = most && json_is_null(most);
		json_int_t said_live = most && !said ? json_integer_value(most) : live;
		if (most)
			json_object_set_new(function_live, key, json_null());
		/* (sizes far apart, said as such: "120 blocks of about 21.4
		 * MiB" were 40 of 61 MiB and 80 of 1.5 MiB, made at one line;
		 * new-user trial 27) */
		double lo, hi;
		block_sizes(site, &lo, &hi);
		char sizes[96];
		if (lo > 0 && hi > 2 * lo)
			snprintf(sizes, sizeof sizes, "of %s to %s",
				 mt_format_bytes(lo, b1, sizeof b1),
				 mt_format_bytes(hi, b2, sizeof b2));
		else
			snprintf(sizes, sizeof sizes, "of about %s",
				 mt_format_bytes(mt_site_block_bytes(site, bytes),
						 b1, sizeof b1));
		mt_finding_append(x, "%s %s, %.0f blocks %s%s",
				       i ? ";" : "",
				       mt_site_label(json_object_get(site, "stack"),
						     label, sizeof label),
				       n, sizes, by_realloc);
		if (!said)
			mt_finding_append(x, ", %s %lld",
					  handed ? "freed by another thread than "
						   "the one that made them:"
						 : live_in,
					  (long long)(handed ? elsewhere : said_live));
	}
	json_decref(function_live);
	json_decref(function_most);
	mt_finding_append(x, ".");
	/* (which site, where several are listed: "at most 4 ... at most
	 * 2. Where 2 are live at once" read as one figure taken for the
	 * other; new-user trial 18) */
	if (few && json_array_size(sites) > 1)
		mt_finding_append(x, " %s %s, where %lld are live at once, %s "
				  "needs %lld times the memory of one buffer: the "
				  "allocator must find room for each anew.",
				  strcmp(few_at, "the script's top level") ? "At" : "In",
				  few_at, (long long)few,
				  strcmp(few_at, "the script's top level") ? "the function"
									  : "it",
				  (long long)few);
	else if (few)
		mt_finding_append(x, " Where %lld are live at once, the function needs "
				  "%lld times the memory of one buffer: the "
				  "allocator must find room for each anew.",
				  (long long)few, (long long)few);
	/* (held together, not "outliving the call that makes them": a
	 * worker's batch of 400 made and freed in one call of it was read
	 * as blocks kept past the call; new-user trial 27) */
	if (kept)
		mt_finding_append(x, " Where %lld are live at once, the blocks are held "
			 "together, many at a time (a batch, a cache, a pool, a "
			 "queue): each one freed and made again is what the "
			 "allocator turns over.",
			 (long long)kept);
	mt_reuse_fix(x, in, two);
	return x;
}

struct mt_finding *mt_rule_temporaries(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	char b1[32], b2[32];

	/* A temporary is short-lived within a unit of work: a call of a
	 * region, or without regions, the function that allocates it. */
	if (f->whole)
		return in->sites ? by_site(in) : NULL;
	if (f->large_allocs < 1)
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
		 mt_format_bytes(size, b1, sizeof b1),
		 mt_format_bytes(f->large_bytes, b2, sizeof b2),
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
	/* Where in the region they are made (sites of its own: sites.h). */
	x->sites = in->sites ? mt_sites_by_bytes(in->sites, 5) : NULL;
	json_t *top = json_array_get(x->sites, 0);
	char label[512];
	for (size_t k = 0; k < 3 && top; k++) {
		json_t *site = json_array_get(x->sites, k);
		if (!site)
			break;
		mt_finding_append(x, "%s %s (%.0f%%%s)%s", k ? "," : " They are made at",
			 mt_site_label(json_object_get(site, "stack"), label,
				       sizeof label),
			 json_number_value(json_object_get(site, "share")) * 100,
			 k ? "" : " of their bytes",
			 json_array_get(x->sites, k + 1) && k < 2 ? "" : ".");
	}
	mt_reuse_fix(x, in, mt_in_place_fits(f->large_max_live));
	return x;
}
