#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "sites.h"

/* A frame as the reader of the code knows it: its function, file and
 * line where it is named (two calls on one line are one place), else
 * where it is. */
static json_t *place(json_t *f)
{
	if (!json_object_get(f, "function"))
		return json_incref(f);
	return json_pack("{s:O?, s:O?, s:O?, s:O?}", "function",
			 json_object_get(f, "function"), "file",
			 json_object_get(f, "file"), "line",
			 json_object_get(f, "line"), "function_offset",
			 json_object_get(f, "function_offset"));
}

/* Sites with the same Python frames are one place in the code: the
 * interpreter called the allocator from different C functions (NumPy's
 * allocation paths).  The Python frames inside the program's own are the
 * library's, one place to its reader ("filt (x.py:9), calling irfft"):
 * by its label, for which two blocks irfft made at two lines of NumPy's
 * code were two sites of one label (new-user trial 25).  Without Python
 * frames, the whole stack, by place, a function that calls itself once. */
static char *fold_key(json_t *stack)
{
	json_t *py = json_array(), *all = json_array();
	size_t i, own = mt_site_own_frame(stack);
	json_t *f;
	bool python_own = mt_stack_has_python(stack);
	if (python_own) {
		char label[512];
		json_array_append_new(py, json_string(mt_site_label(stack, label,
								    sizeof label)));
	}
	json_array_foreach(stack, i, f) {
		if (strcmp(json_string_value(json_object_get(f, "kind")) ?: "",
			   "python") == 0 &&
		    (!python_own || i > own))
			json_array_append(py, f);
		/* (the C runtime's frames say nothing of the place, and where
		 * the stack was cut among them varies) */
		if (mt_frame_is_library(f) &&
		    strcmp(json_string_value(json_object_get(f, "kind")) ?: "", "python"))
			continue;
		json_t *p = place(f);
		/* a recursion is one place, however deep: a frame of the
		 * function the last one kept is in goes */
		json_t *last = json_array_get(all, json_array_size(all) - 1);
		const char *fn = json_string_value(json_object_get(p, "function"));
		if (last && fn &&
		    !strcmp(fn, json_string_value(json_object_get(last, "function")) ?: "") &&
		    json_equal(json_object_get(p, "file"), json_object_get(last, "file")))
			json_decref(p);
		else
			json_array_append_new(all, p);
	}
	/* (all of it the runtime's: the stack as it is) */
	char *key = json_dumps(json_array_size(py)    ? py
			       : json_array_size(all) ? all
						      : stack,
			       JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(py);
	json_decref(all);
	return key;
}

static double caused(json_t *site, const char *const *keys)
{
	json_t *c = json_object_get(site, "caused");
	double v = 0;
	for (size_t k = 0; keys[k]; k++)
		v += json_number_value(json_object_get(c, keys[k]));
	return v;
}

/* The memory given back that undoes what `key` took ("mmap_bytes":
 * "munmap_bytes"); a key that gives back, itself. */
static const char *given_back_key(const char *key)
{
	static const char *const pairs[][2] = {
		{"mmap_bytes", "munmap_bytes"},
		{"brk_grow_bytes", "brk_shrink_bytes"},
		{"own_mmap_bytes", "own_munmap_bytes"},
		{"mmap", "munmap"},
		{"brk_grow", "brk_shrink"},
		{"own_mmap", "own_munmap"},
	};
	for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
		if (!strcmp(key, pairs[i][0]))
			return pairs[i][1];
	return key;
}

/* The same, but the memory the site gave back at the end, after the
 * process last took memory for a large block (the shim's caused_at_end),
 * and as much of what it took: taken and given back once, no churn
 * (three arrays kept for the run and freed at exit were 10% of a loop's
 * churn, "9% at" their line; new-user trial 34). */
static double caused_before_end(json_t *site, const char *const *keys)
{
	json_t *end = json_object_get(site, "caused_at_end");
	double v = caused(site, keys);
	for (size_t k = 0; keys[k]; k++)
		v -= json_number_value(json_object_get(end, given_back_key(keys[k])));
	return fmax(0, v);
}

static int by_value_desc(const void *a, const void *b)
{
	double x = json_number_value(json_object_get(*(json_t *const *)a, "value"));
	double y = json_number_value(json_object_get(*(json_t *const *)b, "value"));
	return (x < y) - (x > y);
}

/* The least and the most of a size, `min` and `max`, of two sites
 * folded into one. */
static void fold_range(json_t *sum, json_t *large, const char *min, const char *max)
{
	json_int_t lo = json_integer_value(json_object_get(large, min));
	json_int_t hi = json_integer_value(json_object_get(large, max));
	json_t *sum_lo = json_object_get(sum, min);
	if (lo && (!sum_lo || lo < json_integer_value(sum_lo)))
		json_object_set_new(sum, min, json_integer(lo));
	if (hi > json_integer_value(json_object_get(sum, max)))
		json_object_set_new(sum, max, json_integer(hi));
}

/* The least and the most block size of two sites folded into one, usable
 * and asked for (absent from summaries written before 2026-11-28). */
static void fold_sizes(json_t *sum, json_t *large)
{
	fold_range(sum, large, "min_bytes", "max_bytes");
	if (json_object_get(large, "min_requested_bytes"))
		fold_range(sum, large, "min_requested_bytes", "max_requested_bytes");
}

/* The small blocks sampled at a site, added to a folded one's. */
static void fold_small(json_t *e, json_t *small)
{
	if (!small)
		return;
	json_t *sum = json_object_get(e, "small");
	if (!sum) {
		sum = json_pack("{s:I, s:I, s:I, s:O?, s:O*}", "samples", (json_int_t)0,
				"sampled_bytes", (json_int_t)0, "bytes", (json_int_t)0,
				"rate", json_object_get(small, "rate"),
				"rate_max", json_object_get(small, "rate_max"));
		json_object_set_new(e, "small", sum);
	}
	const char *add[] = {"samples", "sampled_bytes", "bytes"};
	for (int k = 0; k < 3; k++)
		json_object_set_new(sum, add[k], json_integer(
			json_integer_value(json_object_get(sum, add[k])) +
			json_integer_value(json_object_get(small, add[k]))));
}

/* Folded sites weighed by weigh(site), ranked, with their shares. */
/* Where the folded sites' blocks were given back: their places, all. */
static void fold_released(json_t *e, json_t *site)
{
	json_t *places = json_object_get(site, "released_at");
	if (!json_array_size(places))
		return;
	if (!json_object_get(e, "released_at"))
		json_object_set_new(e, "released_at", json_array());
	json_array_extend(json_object_get(e, "released_at"), places);
	json_t *elsewhere = json_object_get(site, "released_elsewhere");
	if (elsewhere)
		json_object_set_new(e, "released_elsewhere", json_integer(
			json_integer_value(json_object_get(e, "released_elsewhere")) +
			json_integer_value(elsewhere)));
}

static json_t *ranked(json_t *sites, double (*weigh)(json_t *, const void *),
		      const void *arg, size_t max, double min_share)
{
	json_t *folded = json_object(), *out = json_array();
	double total = 0;
	size_t i;
	json_t *site;
	json_array_foreach(sites, i, site) {
		double v = weigh(site, arg);
		/* (the sites the shim had no room to write, summed: part of
		 * the whole, no place of their own) */
		if (json_object_get(site, "rest")) {
			total += v;
			continue;
		}
		char *key = fold_key(json_object_get(site, "stack"));
		if (!key)
			continue;
		json_t *e = json_object_get(folded, key);
		if (!e) {
			e = json_pack("{s:O, s:f, s:{s:I, s:I, s:I, s:I, s:I}, s:{}}",
				      "stack", json_object_get(site, "stack"),
				      "value", 0.0, "large", "allocations",
				      (json_int_t)0, "bytes", (json_int_t)0, "frees",
				      (json_int_t)0, "grows", (json_int_t)0,
				      "max_live_in_function", (json_int_t)0,
				      "caused");
			json_object_set_new(folded, key, e);
		}
		free(key);
		json_t *large = json_object_get(site, "large");
		json_t *sum = json_object_get(e, "large");
		const char *ck;
		json_t *cv;
		json_t *csum = json_object_get(e, "caused");
		json_object_foreach(json_object_get(site, "caused"), ck, cv)
			json_object_set_new(csum, ck, json_integer(
				json_integer_value(json_object_get(csum, ck)) +
				json_integer_value(cv)));
		if (json_object_get(site, "caused_at_end")) {
			json_t *esum = json_object_get(e, "caused_at_end");
			if (!esum) {
				esum = json_object();
				json_object_set_new(e, "caused_at_end", esum);
			}
			json_object_foreach(json_object_get(site, "caused_at_end"), ck, cv)
				json_object_set_new(esum, ck, json_integer(
					json_integer_value(json_object_get(esum, ck)) +
					json_integer_value(cv)));
		}
		json_object_set_new(e, "value",
				    json_real(json_number_value(json_object_get(e, "value")) + v));
		const char *add[] = {"allocations", "bytes", "frees", "grows",
				     "freed_elsewhere"};
		for (int k = 0; k < 5; k++)
			json_object_set_new(sum, add[k], json_integer(
				json_integer_value(json_object_get(sum, add[k])) +
				json_integer_value(json_object_get(large, add[k]))));
		fold_sizes(sum, large);
		/* (absent from recordings made before they were counted) */
		const char *newer[] = {"reallocs", "requested_bytes",
				       "freed_under_larger"};
		for (int k = 0; k < 3; k++)
			if (json_object_get(large, newer[k]))
				json_object_set_new(sum, newer[k], json_integer(
					json_integer_value(json_object_get(sum, newer[k])) +
					json_integer_value(json_object_get(large, newer[k]))));
		/* (a summary before "larger": none, so mt_site_grows falls
		 * back to "grows"; one before the copies were compared, none,
		 * so it goes by the sizes) */
		for (int k = 0; k < 4; k++) {
			static const char *const counted[] = {
				"larger", "smaller", "copied_into_larger",
				"not_copied_into_larger"};
			const char *key = counted[k];
			if (json_object_get(large, key))
				json_object_set_new(sum, key, json_integer(
					json_integer_value(json_object_get(sum, key)) +
					json_integer_value(json_object_get(large, key))));
		}
		fold_small(e, json_object_get(site, "small"));
		fold_released(e, site);
		if (json_is_true(json_object_get(site, "stack_cut")))
			json_object_set_new(e, "stack_cut", json_true());
		if (json_object_get(site, "faults"))
			json_object_set_new(e, "faults", json_integer(
				json_integer_value(json_object_get(e, "faults")) +
				json_integer_value(json_object_get(site, "faults"))));
		json_int_t most = json_integer_value(json_object_get(large, "function_max_live"));
		if (most > json_integer_value(json_object_get(sum, "max_live_in_function")))
			json_object_set_new(sum, "max_live_in_function", json_integer(most));
		json_int_t here = json_integer_value(json_object_get(large, "max_live"));
		if (here > json_integer_value(json_object_get(sum, "max_live")))
			json_object_set_new(sum, "max_live", json_integer(here));
		total += v;
	}
	size_t n = json_object_size(folded), k = 0;
	json_t **all = n ? calloc(n, sizeof *all) : NULL;
	const char *key;
	json_t *e;
	json_object_foreach(folded, key, e) if (all) all[k++] = e;
	if (all)
		qsort(all, k, sizeof *all, by_value_desc);
	for (size_t j = 0; j < k && json_array_size(out) < max && total > 0; j++) {
		double v = json_number_value(json_object_get(all[j], "value"));
		if (v < min_share * total)
			break;
		json_object_set_new(all[j], "share", json_real(v / total));
		json_array_append(out, all[j]);
	}
	free(all);
	json_decref(folded);
	return out;
}

static double weigh_caused(json_t *site, const void *keys)
{
	return caused_before_end(site, keys);
}

static double weigh_bytes(json_t *site, const void *unused)
{
	(void)unused;
	return json_number_value(json_object_get(json_object_get(site, "large"), "bytes"));
}

static double weigh_small(json_t *site, const void *unused)
{
	(void)unused;
	return json_number_value(json_object_get(json_object_get(site, "small"), "bytes"));
}

json_t *mt_sites_by_small(json_t *sites, size_t max)
{
	return ranked(sites, weigh_small, NULL, max, 0.01);
}

double mt_sites_small_samples(json_t *sites, char *rate, size_t size)
{
	size_t i;
	json_t *site;
	/* (the rate set, the one sampled at first, and the sparsest) */
	double n = 0, set = 0, sparsest = 0;
	json_array_foreach(sites, i, site) {
		json_t *small = json_object_get(site, "small");
		double r = json_number_value(json_object_get(small, "rate"));
		n += json_number_value(json_object_get(small, "samples"));
		set = fmax(set, r);
		sparsest = fmax(sparsest, fmax(r, json_number_value(
							  json_object_get(small, "rate_max"))));
	}
	char a[32], b[32];
	if (sparsest > set)
		snprintf(rate, size, "%s to %s", mt_format_bytes(set, a, sizeof a),
			 mt_format_bytes(sparsest, b, sizeof b));
	else
		snprintf(rate, size, "%s", mt_format_bytes(set, a, sizeof a));
	return n;
}

json_t *mt_sites_ranked(json_t *sites, const char *const *keys, size_t max)
{
	return ranked(sites, weigh_caused, keys, max, 0.01);
}

json_t *mt_sites_by_bytes(json_t *sites, size_t max)
{
	return ranked(sites, weigh_bytes, NULL, max, 0.01);
}

json_t *mt_sites_of_region(json_t *sites, const char *name)
{
	json_t *out = json_array(), *site;
	size_t i;
	json_array_foreach(sites, i, site) {
		const char *r = json_string_value(json_object_get(site, "region"));
		if (r && name && !strcmp(r, name))
			json_array_append(out, site);
	}
	return out;
}

bool mt_sites_share_shrinks(json_t *sites)
{
	size_t i;
	json_t *site;
	json_array_foreach(sites, i, site)
		if (json_object_get(json_object_get(site, "large"), "reallocs"))
			return true;
	return false;
}

double mt_site_block_bytes(json_t *site, double usable)
{
	json_t *large = json_object_get(site, "large");
	double n = json_number_value(json_object_get(large, "allocations"));
	double asked = json_number_value(json_object_get(large, "requested_bytes"));
	if (n <= 0)
		return 0;
	return asked > 0 ? asked / n : usable / n;
}

long long mt_site_live_in_function(json_t *site)
{
	json_t *large = json_object_get(site, "large");
	json_int_t live = json_integer_value(json_object_get(large, "max_live_in_function"));
	json_int_t here = json_integer_value(json_object_get(large, "max_live"));
	if (mt_site_holder(json_object_get(site, "stack")))
		return here < live ? here : live;
	/* (a site's first block is not in its function's count; more than
	 * one above it, the site's blocks were several threads' together:
	 * 4 threads with 4 each were "16 live at once in its function",
	 * new-user trial 16) */
	return here > live + 1 || here < live ? live : here;
}

double mt_site_larger(json_t *site)
{
	json_t *large = json_object_get(site, "large");
	json_t *larger = json_object_get(large, "larger");
	return json_number_value(larger ? larger : json_object_get(large, "grows"));
}

/* Is the site a C++ container's growth: libstdc++'s own code that moves
 * a vector's elements into a larger block (push_back, emplace_back,
 * resize), named in the stack from its debug information?  Its blocks'
 * sizes tell it only where many steps are large: a vector of strings
 * grown to 8,192 entries each round has two large steps, 128 and 256
 * KiB, which the sizes below do not take for growth, and "write the
 * result into a buffer already there" was proposed (new-user trial
 * 23). */
bool mt_cxx_growth(const char *function)
{
	/* (a vector's storage, and a hash table's buckets: an unordered_map
	 * made per query, its buckets rehashed as it filled, was told to
	 * "write the result into a buffer that is already there"; kept and
	 * cleared, 2.23 -> 0.82 s; new-user trial 45) */
	static const char *const growing[] = {"_M_realloc_insert",
					      "_M_realloc_append",
					      "_M_default_append", "_M_rehash"};
	for (size_t k = 0; function && k < sizeof growing / sizeof *growing; k++) {
		/* (a method's own frame is named in full, "std::vector<int>::
		 * _M_realloc_insert<int>(...)"; one inlined, by its short
		 * name, "_M_realloc_insert<int>") */
		const char *at = strstr(function, growing[k]);
		if (at && (at == function ||
			   (at - function >= 2 && !memcmp(at - 2, "::", 2))))
			return true;
	}
	return false;
}

static bool grown_by_the_cxx_runtime(json_t *site)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(site, "stack"), i, f)
		if (mt_cxx_growth(json_string_value(json_object_get(f, "function"))))
			return true;
	return false;
}

bool mt_site_grows(json_t *site)
{
	if (grown_by_the_cxx_runtime(site))
		return true;
	json_t *large = json_object_get(site, "large");
	double allocs = json_number_value(json_object_get(large, "allocations"));
	double lo = json_number_value(json_object_get(large, "min_bytes"));
	double hi = json_number_value(json_object_get(large, "max_bytes"));
	double copied = json_number_value(json_object_get(large, "copied_into_larger"));
	double other = json_number_value(json_object_get(large, "not_copied_into_larger"));
	/* (or less, where nearly every block was larger than the one before
	 * and the bytes show them copied: np.append of two numbers a row to
	 * an array of 16 K rows, large from 128 to 352 KiB in 13,808 steps,
	 * was told to write into a buffer already there, with out=, which
	 * np.append does not take; preallocating saved 2.10 -> 0.77 s:
	 * new-user trial 43) */
	bool stepwise = mt_site_larger(site) >= 0.9 * allocs && copied > other;
	if (!(lo > 0 && (hi >= 4 * lo || stepwise)))
		return false;
	/* A buffer grown is copied into the next, larger block before it
	 * is freed (or realloc does it): two of the site's blocks live at
	 * once.  Sizes that cycle, each block freed before the next is made
	 * (a std::vector<double> tmp(n), n from 1 to 8 MiB and again), are
	 * no buffer grown, whatever their order (new-user trial 9). */
	/* Where the shim compared the blocks freed with the larger one
	 * made after them, the bytes tell: a buffer grown is copied into the
	 * next.  Sizes that cycle up and back, each a new array filled anew
	 * (a random array of 10 to 45 MiB each round, the last one live
	 * until the next is made), were taken for growth (new-user trial
	 * 27). */
	/* (but a table doubled and rehashed is grown with its bytes laid out
	 * anew: almost every block larger than the one before, four in five,
	 * where new arrays of sizes drawn each round are larger as often as
	 * smaller; its fix was "write the result into a buffer that is
	 * already there", where sizing the table once saved 0.29 -> 0.11 s;
	 * new-user trial 35) */
	double rising = mt_site_larger(site),
	       falling = json_number_value(json_object_get(large, "smaller"));
	if (copied + other > 0 && copied < other &&
	    !(rising >= 4 && rising >= 4 * falling))
		return false;
	/* (a summary before "reallocs" cannot tell realloc's growth) */
	json_t *reallocs = json_object_get(large, "reallocs");
	if (reallocs && json_number_value(reallocs) <= 0 &&
	    json_number_value(json_object_get(large, "max_live")) < 2)
		return false;
	/* Grown without realloc, each step's block is freed once copied
	 * into the next, larger one, made there: while it is live.  Rows of
	 * a matrix whose row size changes each round, made at their size and
	 * freed before the next round's, were "a buffer grown step by step"
	 * (many of them live at once, and the round's first larger than the
	 * last: new-user trial 29).  (A recording before the count: by the
	 * sizes.) */
	json_t *under = json_object_get(large, "freed_under_larger");
	if (under && json_number_value(reallocs) <= 0 &&
	    json_number_value(under) < 2)
		return false;
	/* Of the blocks whose size differs from the one before, three in
	 * five larger: a buffer grown by any step, each round starting again
	 * small (sizes drawn at random are larger as often as smaller, within
	 * a few percent over hundreds; the allocator's size classes make
	 * equal sizes of a constant step, which count for neither).  NumPy's
	 * np.append copies its input before each larger result: 766 larger
	 * against 386 smaller, which two in three missed (new-user trial 7).
	 * A summary without the counts: doublings, a third of the blocks. */
	if (json_object_get(large, "larger") || json_object_get(large, "smaller")) {
		double larger = mt_site_larger(site);
		double smaller = json_number_value(json_object_get(large, "smaller"));
		return larger >= 2 && larger >= 1.5 * smaller;
	}
	double grows = json_number_value(json_object_get(large, "grows"));
	return grows >= 2 && 3 * grows >= allocs;
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path ? path : "?";
}

/* Code that is the interpreter's or a library's, not the program's
 * ("<frozen importlib._bootstrap>", "<__array_function__ internals>";
 * but "<string>" and "<stdin>" are the program's: python -c, a pipe). */
static bool library_file(const char *file)
{
	return !file ||
	       (file[0] == '<' && strcmp(file, "<string>") != 0 &&
		strcmp(file, "<stdin>") != 0) ||
	       strncmp(file, "/usr/lib/python", 15) == 0 ||
	       strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
	       strstr(file, "/lib/python3");
}

/* A C++ function of the standard library's, by its name as demangled
 * (a template's name begins with its return type): where the program was
 * built without debug information, std::vector's out-of-line templates of
 * a -O0 build have no header file to tell them by. */
static bool cxx_library_function(const char *name)
{
	const char *own = name;
	int depth = 0;
	for (const char *c = name; *c && *c != '(' ; c++) {
		if (*c == '<')
			depth++;
		else if (*c == '>')
			depth--;
		else if (*c == ' ' && !depth)
			own = c + 1;
	}
	return !strncmp(own, "std::", 5) || !strncmp(own, "__gnu_cxx::", 11);
}

/* Native code that is the runtime's or a library's templates: the C and
 * C++ libraries, code inlined from system headers (std::vector). */
static bool library_native(json_t *f)
{
	static const char *const runtime[] = {"libc.so", "libstdc++.so",
					      "libgcc_s.so", "ld-linux"};
	const char *file = json_string_value(json_object_get(f, "file"));
	const char *object = base_name(json_string_value(json_object_get(f, "object")));
	const char *function = json_string_value(json_object_get(f, "function"));
	if (file && (!strncmp(file, "/usr/include/", 13) ||
		     !strncmp(file, "/usr/lib/gcc/", 13)))
		return true;
	if (function && !strcmp(function, "_start")) /* (the C runtime's, linked in) */
		return true;
	if (!file && function && cxx_library_function(function))
		return true;
	for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++)
		if (!strncmp(object, runtime[i], strlen(runtime[i])))
			return true;
	return false;
}

bool mt_frame_is_library(json_t *f)
{
	const char *kind = json_string_value(json_object_get(f, "kind"));
	if (kind && !strcmp(kind, "python"))
		return library_file(json_string_value(json_object_get(f, "file")));
	return library_native(f);
}

static bool is_python(json_t *f)
{
	return !strcmp(json_string_value(json_object_get(f, "kind")) ?: "", "python");
}

/* The index of the innermost Python frame, or the stack's size. */
static size_t first_python(json_t *stack)
{
	size_t i, n = json_array_size(stack);
	for (i = 0; i < n && !is_python(json_array_get(stack, i)); i++)
		;
	return i;
}

bool mt_stack_python_first(json_t *stack)
{
	return json_array_size(stack) && first_python(stack) == 0;
}

bool mt_stack_has_python(json_t *stack)
{
	return first_python(stack) < json_array_size(stack);
}

size_t mt_site_own_frame(json_t *stack)
{
	size_t i, py = first_python(stack);
	json_t *f;
	/* In Python code, the program's innermost Python frame, whatever
	 * native frames lie around it (the allocator's caller, a builtin
	 * calling back): the line a reader looks for; else the innermost
	 * Python frame. */
	if (py < json_array_size(stack)) {
		json_array_foreach(stack, i, f)
			if (is_python(f) &&
			    !library_file(json_string_value(json_object_get(f, "file"))))
				return i;
		return py;
	}
	json_array_foreach(stack, i, f)
		if (!library_native(f))
			return i;
	return 0;
}

/* The frame of the function that holds frame k: k itself, or past the
 * functions inlined there. */
static size_t holding_frame(json_t *stack, size_t k)
{
	while (json_is_true(json_object_get(json_array_get(stack, k), "inlined")) &&
	       k + 1 < json_array_size(stack))
		k++;
	return k;
}

const char *mt_site_object_unnamed(json_t *stack, bool *no_symbols)
{
	json_t *f = json_array_get(stack, mt_site_own_frame(stack));
	if (!f || is_python(f) || library_native(f) || json_object_get(f, "file"))
		return NULL;
	/* (read and named from its symbol table, or read and stripped: a
	 * frame with neither may be of an object no longer there) */
	*no_symbols = json_is_true(json_object_get(f, "no_symbol"));
	if (!*no_symbols && !json_object_get(f, "function"))
		return NULL;
	return json_string_value(json_object_get(f, "object"));
}

const char *mt_site_holder(json_t *stack)
{
	size_t own = mt_site_own_frame(stack);
	size_t holder = holding_frame(stack, own);
	return holder != own ? json_string_value(json_object_get(
				       json_array_get(stack, holder), "function"))
			     : NULL;
}

const char *mt_site_label(json_t *stack, char *buf, size_t len)
{
	size_t own = mt_site_own_frame(stack);
	mt_frame_label(json_array_get(stack, own), buf, len);
	/* A function the compiler inlined: and the one it is in, whose
	 * blocks these are (the function the figures of a site go by). */
	size_t holder = holding_frame(stack, own);
	if (holder != own) {
		char in[256];
		size_t at;
		/* the functions inlined between them too: the path the code
		 * takes there (not the library's own: a lambda run by
		 * std::thread read "operator() (p.cpp:27) < __invoke_impl<
		 * void, main(int, char**)::<lambda()> > (invoke.h:61)
		 * inlined into _M_run (std_thread.h:210)") */
		for (size_t k = own + 1; k < holder; k++) {
			if (mt_frame_is_library(json_array_get(stack, k)))
				continue;
			at = strlen(buf);
			snprintf(buf + at, len - at, " < %s",
				 mt_frame_label(json_array_get(stack, k), in, sizeof in));
		}
		at = strlen(buf);
		snprintf(buf + at, len - at, " inlined into %s",
			 mt_frame_label(json_array_get(stack, holder), in, sizeof in));
	}
	/* and the library's function it called, which allocated */
	const char *called = mt_site_called(stack);
	size_t at = strlen(buf);
	if (called)
		snprintf(buf + at, len - at, ", calling %s", called);
	return buf;
}

const char *mt_site_release_label(json_t *site, char *buf, size_t len)
{
	/* (Python's blocks are given back by the interpreter, wherever the
	 * last reference goes) */
	if (mt_stack_has_python(json_object_get(site, "stack")))
		return NULL;
	json_t *places = json_object_get(site, "released_at"), *r, *o;
	double all = json_number_value(json_object_get(site, "released_elsewhere"));
	double most = 0;
	size_t i, j;
	char label[512];
	json_array_foreach(places, i, r) all += json_number_value(json_object_get(r, "count"));
	/* (two places that read the same, one line, are one) */
	json_array_foreach(places, i, r) {
		json_t *stack = json_object_get(r, "stack");
		if (mt_frame_is_library(json_array_get(stack, mt_site_own_frame(stack))))
			continue;
		mt_site_label(stack, label, sizeof label);
		double n = 0;
		json_array_foreach(places, j, o) {
			char other[512];
			if (!strcmp(mt_site_label(json_object_get(o, "stack"), other,
						  sizeof other),
				    label))
				n += json_number_value(json_object_get(o, "count"));
		}
		if (n > most) {
			most = n;
			snprintf(buf, len, "%s", label);
		}
	}
	if (most <= 0 || most < 0.5 * all)
		return NULL;
	/* (the line that makes them: nothing to add) */
	return strcmp(mt_site_label(json_object_get(site, "stack"), label, sizeof label),
		      buf)
		       ? buf
		       : NULL;
}

const char *mt_site_called(json_t *stack)
{
	return json_string_value(json_object_get(mt_site_called_frame(stack),
						 "function"));
}

json_t *mt_site_called_frame(json_t *stack)
{
	size_t own = mt_site_own_frame(stack);
	if (!is_python(json_array_get(stack, own)))
		return NULL;
	/* the outermost with a file of its own (NumPy's dispatch wrappers
	 * have none) and a name a reader knows (not a closure's:
	 * "decorator.<locals>.public_api") */
	for (size_t k = own; k-- > 0;) {
		json_t *f = json_array_get(stack, k);
		const char *file = json_string_value(json_object_get(f, "file"));
		const char *fn = json_string_value(json_object_get(f, "function"));
		if (is_python(f) && file && file[0] != '<' && fn &&
		    !strstr(fn, "<locals>"))
			return f;
	}
	return NULL;
}

const char *mt_frame_label(json_t *f, char *buf, size_t len)
{
	const char *kind = json_string_value(json_object_get(f, "kind"));
	if (kind && strcmp(kind, "python") == 0) {
		snprintf(buf, len, "%s (%s:%lld)",
			 json_string_value(json_object_get(f, "function")),
			 base_name(json_string_value(json_object_get(f, "file"))),
			 (long long)json_integer_value(json_object_get(f, "line")));
	} else if (json_object_get(f, "function")) {
		/* named offline (symbolize.c) */
		const char *file = json_string_value(json_object_get(f, "file"));
		if (file)
			snprintf(buf, len, "%s (%s:%lld)",
				 json_string_value(json_object_get(f, "function")),
				 base_name(file),
				 (long long)json_integer_value(json_object_get(f, "line")));
		else if (json_object_get(f, "function_offset"))
			snprintf(buf, len, "%s+0x%llx (%s)",
				 json_string_value(json_object_get(f, "function")),
				 (unsigned long long)json_integer_value(
					 json_object_get(f, "function_offset")),
				 base_name(json_string_value(json_object_get(f, "object"))));
		else
			snprintf(buf, len, "%s (%s)",
				 json_string_value(json_object_get(f, "function")),
				 base_name(json_string_value(json_object_get(f, "object"))));
	} else {
		const char *symbol = json_string_value(json_object_get(f, "symbol"));
		const char *object = base_name(json_string_value(json_object_get(f, "object")));
		long long offset = (long long)json_integer_value(json_object_get(f, "offset"));
		long long from_symbol = (long long)json_integer_value(
			json_object_get(f, "symbol_offset"));
		if (symbol)
			snprintf(buf, len, "%s+0x%llx (%s)", symbol, from_symbol, object);
		else
			snprintf(buf, len, "%s+0x%llx", object, offset);
	}
	return buf;
}

double mt_sites_total(json_t *sites, const char *const *keys)
{
	size_t i;
	json_t *site;
	double total = 0;
	json_array_foreach(sites, i, site) total += caused(site, keys);
	return total;
}

bool mt_site_in_numpy(json_t *site)
{
	size_t k;
	json_t *f, *stack = json_object_get(site, "stack");
	bool python_first = mt_stack_python_first(stack), in_python = false;
	json_array_foreach(stack, k, f) {
		/* (the innermost Python frames and the code under them: the
		 * C code that called outer Python frames back is not the
		 * site's, whose code that is) */
		if (!python_first && in_python && !is_python(f))
			break;
		in_python = is_python(f);
		const char *file = json_string_value(json_object_get(f, "file"));
		const char *object = json_string_value(json_object_get(f, "object"));
		if ((file && strstr(file, "/numpy/")) ||
		    (object && strstr(object, "/numpy/")))
			return true;
	}
	return false;
}

bool mt_sites_in_numpy(json_t *sites)
{
	size_t i;
	json_t *site;
	json_array_foreach(sites, i, site)
		if (mt_site_in_numpy(site))
			return true;
	return false;
}

/* A native frame of the interpreter that nothing names (no symbol, no
 * debug information): "python3+0x13f633" between two Python frames says
 * nothing to a Python user (new-user trial 12) but that the interpreter's
 * C code called back (map, a type's __init__), which is said instead; a
 * stack of the interpreter's own code alone keeps the addresses. */
static bool unnamed_interpreter_frame(json_t *f)
{
	const char *object = json_string_value(json_object_get(f, "object"));
	const char *base = object ? base_name(object) : "";
	return !is_python(f) && !json_object_get(f, "function") &&
	       !json_object_get(f, "symbol") &&
	       (!strncmp(base, "python", 6) || !strncmp(base, "libpython", 9));
}

void mt_site_print_callers(FILE *out, json_t *site, size_t max)
{
	json_t *stack = json_object_get(site, "stack");
	char label[512];
	size_t own = holding_frame(stack, mt_site_own_frame(stack)), shown = 0;
	/* (a stack that lists its Python frames first: the native frame
	 * under them is the interpreter's function that called the
	 * allocator, no caller) */
	bool python_first = mt_stack_python_first(stack);
	bool python = first_python(stack) < json_array_size(stack);
	for (size_t d = own + 1; shown < max && d < json_array_size(stack); d++) {
		json_t *f = json_array_get(stack, d);
		/* (between Python frames, the C code that called back into
		 * Python: map, sorted's key, a NumPy ufunc) */
		if (!is_python(f) && (python_first || mt_frame_is_library(f)))
			continue;
		if (python && unnamed_interpreter_frame(f))
			fprintf(out, " < C code (%s)",
				base_name(json_string_value(json_object_get(f, "object"))));
		else
			fprintf(out, " < %s", mt_frame_label(f, label, sizeof label));
		shown++;
	}
	if (shown < max && json_is_true(json_object_get(site, "stack_cut")))
		fputs(" < [deeper frames not recorded]", out);
}

/* Everything the allocator moved on a site's account, then its bytes. */
static double weigh_all(json_t *site, const void *unused)
{
	const char *k;
	json_t *v;
	double w = 0;
	(void)unused;
	json_object_foreach(json_object_get(site, "caused"), k, v) {
		size_t n = strlen(k);
		if (n > 6 && strcmp(k + n - 6, "_bytes") == 0)
			w += json_number_value(v);
	}
	/* (a page faulted in: a page's worth of memory the kernel gave) */
	w += 4096.0 * (double)json_integer_value(json_object_get(site, "faults"));
	return w + weigh_bytes(site, NULL) * 1e-3;
}

static uint64_t caused_count(json_t *site, const char *key)
{
	return (uint64_t)json_integer_value(
		json_object_get(json_object_get(site, "caused"), key));
}

/* Code named by address only (a stripped object, no debug information,
 * JIT code): said once per object under the table. */
static void unnamed_note(FILE *out, json_t *sites)
{
	json_t *seen = json_object(), *site;
	size_t i;
	json_array_foreach(sites, i, site) {
		json_t *stack = json_object_get(site, "stack");
		json_t *f = json_array_get(stack, mt_site_own_frame(stack));
		const char *kind = json_string_value(json_object_get(f, "kind"));
		const char *object = json_string_value(json_object_get(f, "object"));
		if (kind && strcmp(kind, "native") == 0 && object &&
		    !json_object_get(f, "function") && !json_object_get(f, "symbol"))
			json_object_set_new(seen, object, json_true());
	}
	const char *object;
	json_t *unused;
	json_object_foreach(seen, object, unused) {
		if (access(object, R_OK) != 0)
			fprintf(out, "  note: %s is not here to read its names "
				     "from (moved, or removed since the run): its "
				     "sites are shown as object+offset\n",
				object);
		else
			fprintf(out, "  note: %s has no symbols nor debug "
				     "information for these sites (stripped?): "
				     "shown as object+offset; its debug symbols (a "
				     "-dbgsym package, or a build with -g) name them\n",
				object);
	}
	json_decref(seen);
}

/* How many of the faults sampled the sites' column accounts for: the
 * rest fell outside the large blocks (small objects, stacks, the
 * interpreter's memory, files) or in blocks the shim did not follow. */
static void print_fault_coverage(FILE *out, json_t *s, json_t *fs)
{
	json_int_t period = json_integer_value(json_object_get(fs, "period"));
	json_int_t recorded = json_integer_value(json_object_get(fs, "recorded"));
	json_int_t on = json_integer_value(json_object_get(fs, "on_sites"));
	json_int_t rest = 0;
	size_t i;
	json_t *site;
	json_array_foreach(json_object_get(s, "sites"), i, site)
		if (json_object_get(site, "rest"))
			rest += json_integer_value(json_object_get(site, "faults"));
	fprintf(out, "  faults: page-fault samples (1 in %lld; %lld recorded), each "
		     "put on the large block live where it fell: %lld (%.0f%%) "
		     "fell in these sites' blocks%s, the rest in other memory "
		     "(small objects, stacks, the interpreter's, files)\n",
		(long long)period, (long long)recorded, (long long)on,
		recorded ? 100.0 * (double)on / (double)recorded : 0.0,
		rest ? " (those summed below included)" : "");
}

/* A site as a row shows it: its label and `depth` - 1 callers (malloc'd;
 * NULL when out of memory). */
static char *site_shown(json_t *site, unsigned depth)
{
	json_t *stack = json_object_get(site, "stack");
	char label[512], *shown = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&shown, &len);
	if (!m)
		return NULL;
	fputs(mt_site_label(stack, label, sizeof label), m);
	mt_site_print_callers(m, site, depth - 1);
	fclose(m);
	return shown;
}

/* The sites of the small blocks sampled (MEMTRACE_SITES), by their
 * bytes: each sample stands for the bytes the sampling passed over. */
static void print_small_sites(FILE *out, json_t *all, unsigned depth)
{
	enum { SHOWN = 10 };
	char rate[80];
	double n = mt_sites_small_samples(all, rate, sizeof rate);
	if (n <= 0)
		return;
	json_t *sites = mt_sites_by_small(all, SIZE_MAX), *site;
	size_t i;
	fprintf(out, "\nsites of small blocks, sampled about once in every %s "
		     "of allocations (%.0f samples): their bytes, estimated\n",
		rate, n);
	fprintf(out, "  %7s %9s %6s  %s\n", "samples", "MiB", "share", "site < callers");
	/* (rows that read the same at this depth summed, as above) */
	json_t *rows = json_array();
	json_array_foreach(sites, i, site) {
		char *shown = site_shown(site, depth);
		json_t *small = json_object_get(site, "small"), *row = NULL, *r2;
		size_t k;
		json_array_foreach(rows, k, r2) if (!strcmp(json_string_value(
			json_object_get(r2, "shown")), shown ?: "")) row = r2;
		if (!row) {
			row = json_pack("{s:s, s:f, s:f, s:f}", "shown", shown ?: "?",
					"samples", 0.0, "bytes", 0.0, "share", 0.0);
			json_array_append_new(rows, row);
		}
		free(shown);
		const char *add[] = {"samples", "bytes"};
		for (int a = 0; a < 2; a++)
			json_object_set_new(row, add[a], json_real(
				json_number_value(json_object_get(row, add[a])) +
				json_number_value(json_object_get(small, add[a]))));
		json_object_set_new(row, "share", json_real(
			json_number_value(json_object_get(row, "share")) +
			json_number_value(json_object_get(site, "share"))));
	}
	json_array_foreach(rows, i, site) {
		if (i == SHOWN)
			break;
		fprintf(out, "  %7.0f %9.1f %5.0f%%  %s\n",
			json_number_value(json_object_get(site, "samples")),
			json_number_value(json_object_get(site, "bytes")) / (1 << 20),
			json_number_value(json_object_get(site, "share")) * 100,
			json_string_value(json_object_get(site, "shown")));
	}
	json_decref(rows);
	json_decref(sites);
}

/* A row of the table of sites: the columns, summed over the sites that
 * read the same. */
static const char *const row_causes[] = {"brk_grow", "brk_shrink", "mmap",
					 "munmap", "purge", "thread_heap_shrink",
					 "own_mmap", "own_munmap", "own_purge"};
#define ROW_CAUSES (sizeof row_causes / sizeof *row_causes)
struct row {
	char *shown;
	json_int_t blocks, live_fn, faults, caused[ROW_CAUSES];
	double bytes;
};

static void row_add(struct row *r, json_t *site)
{
	json_t *large = json_object_get(site, "large");
	r->blocks += json_integer_value(json_object_get(large, "allocations"));
	r->bytes += json_number_value(json_object_get(large, "bytes"));
	json_int_t live = json_integer_value(json_object_get(large, "max_live_in_function"));
	if (live > r->live_fn)
		r->live_fn = live;
	r->faults += json_integer_value(json_object_get(site, "faults"));
	for (size_t c = 0; c < ROW_CAUSES; c++)
		r->caused[c] += (json_int_t)caused_count(site, row_causes[c]);
}

/* A thread heap's shrink gives back what all the blocks freed since the
 * one before left free: the count goes to the site whose free set it
 * off, the bytes to every one of them, and explain's site shares are of
 * the bytes (new-user trial 20: 238 of 240 shrinks at one line, which
 * explain said gave back 40%). */
static void shared_shrinks_note(FILE *out, json_t *sites)
{
	size_t i;
	json_t *site;
	json_array_foreach(sites, i, site) {
		json_t *caused = json_object_get(site, "caused");
		if (json_number_value(json_object_get(caused, "thread_heap_shrink_bytes")) > 0 &&
		    !json_integer_value(json_object_get(caused, "thread_heap_shrink"))) {
			fputs("  note: thr-hp- counts the thread-heap shrinks a "
			      "free of the site's blocks set off; what a shrink "
			      "gives back is shared among the sites of the blocks "
			      "freed since the one before, and explain's site "
			      "shares are of those bytes\n",
			      out);
			return;
		}
	}
}

void mt_sites_print(FILE *out, json_t *s, unsigned depth)
{
	json_t *sites = ranked(json_object_get(s, "sites"), weigh_all, NULL,
			       SIZE_MAX, 0),
	       *site;
	/* (a site of small samples only is in the table of its own below) */
	for (size_t k = json_array_size(sites); k-- > 0;)
		if (weigh_all(json_array_get(sites, k), NULL) <= 0)
			json_array_remove(sites, k);
	size_t i;
	fprintf(out, "\nsites of large blocks, pid %lld (what the allocator did "
		     "while allocating or freeing them), and of the program's "
		     "own mappings (own+, own-) and purges (own-pg)\n",
		(long long)json_integer_value(json_object_get(s, "pid")));
	if (!json_array_size(sites)) {
		fputs(json_object_get(s, "sites") ? "  none\n"
						  : "  not recorded (a trace without "
						    "its closing record)\n",
		      out);
		json_decref(sites);
		print_small_sites(out, json_object_get(s, "sites"), depth);
		return;
	}
	/* From a trace with fault samples: the faults in each site's blocks. */
	json_t *fs = json_object_get(s, "fault_samples");
	bool faults = json_object_get(fs, "on_sites") != NULL;
	fprintf(out, "  %7s %9s %7s %7s %7s %7s %7s %7s %7s %6s %6s %6s%s  %s\n",
		"blocks", "MiB", "live-fn", "brk+", "brk-", "mmap", "munmap",
		"purges", "thr-hp-", "own+", "own-", "own-pg",
		faults ? "   faults" : "",
		"site < callers (same Python frames folded)");
	/* Rows that would read the same (stacks that differ only in frames
	 * the label does not show: an import's deeper callers) are one. */
	size_t n = json_array_size(sites), nrows = 0;
	struct row *rows = n ? calloc(n, sizeof *rows) : NULL;
	json_array_foreach(sites, i, site) {
		if (!rows)
			break;
		char *shown = site_shown(site, depth);
		if (!shown)
			continue;
		struct row *r = NULL;
		for (size_t k = 0; k < nrows && !r; k++)
			if (!strcmp(rows[k].shown, shown))
				r = &rows[k];
		if (r)
			free(shown);
		else {
			r = &rows[nrows++];
			r->shown = shown;
		}
		row_add(r, site);
	}
	for (size_t k = 0; k < nrows; k++) {
		const struct row *r = &rows[k];
		char nf[32] = "";
		if (faults)
			snprintf(nf, sizeof nf, " %8lld", (long long)r->faults);
		fprintf(out, "  %7lld %9.1f %7lld", (long long)r->blocks,
			r->bytes / (1 << 20), (long long)r->live_fn);
		for (size_t c = 0; c < ROW_CAUSES; c++)
			fprintf(out, c < ROW_CAUSES - 3 ? " %7lld" : " %6lld",
				(long long)r->caused[c]);
		fprintf(out, "%s  %s\n", nf, r->shown);
		free(r->shown);
	}
	free(rows);
	json_array_foreach(json_object_get(s, "sites"), i, site) {
		json_t *rest = json_object_get(site, "rest");
		if (rest)
			fprintf(out, "  %7lld %9.1f  and %lld sites more, too many "
				     "to write out: their sum\n",
				(long long)json_integer_value(json_object_get(
					json_object_get(site, "large"), "allocations")),
				json_number_value(json_object_get(json_object_get(
					site, "large"), "bytes")) / (1 << 20),
				(long long)json_integer_value(rest));
	}
	if (faults)
		print_fault_coverage(out, s, fs);
	shared_shrinks_note(out, sites);
	unnamed_note(out, sites);
	json_decref(sites);
	print_small_sites(out, json_object_get(s, "sites"), depth);
}
