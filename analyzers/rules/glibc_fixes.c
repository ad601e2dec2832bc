/* The glibc settings that keep large blocks on the heap and the heap from
 * being trimmed under them, sized from the measured figures.  Shared by the
 * churn and threshold rules. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "explain.h"
#include "rules.h"
#include "sites.h"

/* Its default, which setting the trim threshold alone pins. */
#define GLIBC_MMAP_THRESHOLD_DEFAULT (128ull << 10)

/* Blocks above the ceiling of a glibc before 2.36 (figures.h): no
 * mapping at all puts them on the heap (measured: 40 blocks of 64 MiB,
 * 655,000 faults -> 16,000; a buffer grown to 32 MiB, whose last chunk is
 * just above it, helped where the capped threshold hurt). */
static void no_mapping_fix(struct mt_finding *x, unsigned long long trim,
			   double ceiling)
{
	char b[32];
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_SETTING);
	if (!fix)
		return;
	snprintf(fix->setting, sizeof fix->setting,
		 "GLIBC_TUNABLES=glibc.malloc.mmap_max=0:"
		 "glibc.malloc.trim_threshold=%llu",
		 trim);
	char c[32];
	snprintf(fix->text, sizeof fix->text,
		 "map no block at all (mmap max 0), so that every block, "
		 "these above the %s that this glibc takes for an mmap "
		 "threshold included, comes from the heap, and leave up to "
		 "%s free at its top before trimming (trim threshold); the "
		 "heap then holds every large block, and one still live "
		 "above freed ones keeps them from being given back",
		 mt_format_bytes(ceiling, c, sizeof c),
		 mt_format_bytes((double)trim, b, sizeof b));
}

/* The program fixes the thresholds itself, with mallopt, which glibc
 * takes after the GLIBC_TUNABLES settings: no setting changes them (a
 * program's mallopt(M_MMAP_THRESHOLD, 64 KiB): 1,300,074 faults bare,
 * 1,300,075 with the mmap threshold set to 512 KiB; new-user trial 14).
 * The same thresholds, then, in its call. */
static void mallopt_fix(struct mt_finding *x, unsigned long long mmap,
			unsigned long long trim, bool capped, double ceiling)
{
	char b1[32], b2[32], c[32];
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_CODE);
	if (!fix)
		return;
	snprintf(fix->text, sizeof fix->text,
		 "the program sets glibc's thresholds itself (mallopt), after "
		 "the GLIBC_TUNABLES settings are read, so no setting changes "
		 "them: in that call keep blocks up to %s on the heap "
		 "(M_MMAP_THRESHOLD %llu%s%s) and leave up to %s free at its "
		 "top before trimming (M_TRIM_THRESHOLD %llu), or remove the "
		 "call and let glibc adapt them",
		 mt_format_bytes((double)mmap, b1, sizeof b1), mmap,
		 capped ? ", or M_MMAP_MAX 0 for blocks above " : "",
		 capped ? mt_format_bytes(ceiling, c, sizeof c) : "",
		 mt_format_bytes((double)trim, b2, sizeof b2), trim);
}

static bool grows_past(const struct mt_finding *x, double bytes);

void mt_glibc_threshold_fixes(struct mt_finding *x,
			      const struct mt_call_figures *f, long page_size)
{
	char b1[32], b2[32];
	/* The blocks to keep on the heap, and the free space at its top to
	 * leave there: every large block of a call, or what one trim gave
	 * back, whichever is more. */
	/* (no large block: small ones churn, none to keep from mmap; the
	 * bytes trims gave back were taken for a block's, 2.6 GB, and a
	 * program of 12 KB rows had mmap_max=0 proposed; new-user trial 10) */
	double block = f->large_allocs > 0 ? f->large_bytes / f->large_allocs
					    : 0;
	/* The blocks that churn, not their mean: when they grow from 1 to
	 * 7 MiB, a threshold at 2 MiB keeps most of them mapped.  By their
	 * bytes, as a mapped block costs a fault a page: blocks of 1 to
	 * 32 MiB, one of each, had 95% of the blocks below 32 MiB, but the
	 * one of 32 MiB, still mapped, took 40.8k faults where a threshold
	 * above it left 8.2k (new-user trial 30). */
	if (f->large_p95_bytes > block)
		block = f->large_p95_bytes;
	/* A buffer grown step by step ends at its largest block, which each
	 * round reaches: by its p95 the threshold was that block's size,
	 * and glibc maps a block of the threshold or more (realloc by 1 MiB
	 * steps to 64 MiB: 64 MiB proposed, 131k faults -> 147k and 245 ->
	 * 349 ms; 64 MiB and a page, 16k and 69 ms; new-user trial 30). */
	size_t i;
	json_t *site;
	json_array_foreach(x->sites, i, site) {
		double most = json_number_value(json_object_get(
			json_object_get(site, "large"), "max_bytes"));
		if (most > block && mt_site_grows(site))
			block = most;
	}
	/* Nor below where glibc's own threshold rose: to the size of a
	 * mapped block the program freed, which glibc keeps on the heap since
	 * (dict tables of 10 MiB among many smaller blocks: 8 MiB set them
	 * mapping again, 208k faults where 16 MiB took 180k). */
	if (f->glibc_thresholds && f->thresholds_dynamic &&
	    f->mmap_threshold > GLIBC_MMAP_THRESHOLD_DEFAULT &&
	    f->mmap_threshold > block)
		block = f->mmap_threshold;
	/* (a realloc that moves a block holds the old and the new one at
	 * once: a buffer grown by 1 KiB steps to 200 MiB, one block live
	 * between calls, had 256 MiB proposed, and the heap, the old copy
	 * freed below the new, still trimmed: 307k faults, where 512 MiB
	 * left 51k; new-user trial 8) */
	double live = f->large_max_live;
	if (f->realloc_moves > 0 && live < 2)
		live = 2;
	double at_top = live * block;
	if (f->brk_shrink > 0 && f->brk_shrink_bytes / f->brk_shrink > at_top)
		at_top = f->brk_shrink_bytes / f->brk_shrink;
	/* Nor below what the heap held: all of it can come free at once (a
	 * grid of rows rebuilt each round, 8.1 MiB live at its peak: its
	 * trims were of 4 MiB, but 8 MiB left 121 trims of 8 MiB and 246k
	 * faults, where 16 MiB left none; new-user trial 21).  A quarter
	 * more, for the chunks' headers and the holes between them; above
	 * the heap's size any threshold is the same: it never trims. */
	unsigned long long mmap = mt_pow2_at_least(block + (double)page_size);
	unsigned long long trim =
		mt_pow2_at_least(fmax(2 * at_top, 1.25 * f->peak_live));
	double ceiling = f->mmap_threshold_ceiling;
	bool capped = ceiling > 0 && (double)mmap > ceiling;
	if (capped)
		mmap = (unsigned long long)ceiling;
	if (f->thresholds_by_mallopt) {
		mallopt_fix(x, mmap, trim, capped, ceiling);
		return;
	}
	/* Blocks that churn above the ceiling: no threshold keeps them on
	 * the heap (measured: no change on a program of 48 MiB blocks);
	 * mapping none does, first.  The capped threshold follows only for
	 * blocks mostly below it, by bytes (a buffer doubled to 64 MiB: its
	 * blocks' mean is 13 MiB, but half its bytes are in the last one,
	 * and the capped threshold left 772k faults at 768k). */
	if (capped)
		no_mapping_fix(x, trim, ceiling);
	if (capped && (f->large_bytes / fmax(f->large_allocs, 1) > ceiling ||
		       f->large_share_32m >= 0.5))
		return;

	/* Blocks all below the default threshold: setting it is setting
	 * the trim threshold alone, below. */
	struct mt_fix *fix = mmap > GLIBC_MMAP_THRESHOLD_DEFAULT
				     ? mt_fix_add(x, MT_FIX_SETTING)
				     : NULL;
	if (fix) {
		snprintf(fix->setting, sizeof fix->setting,
			 "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=%llu:"
			 "glibc.malloc.trim_threshold=%llu",
			 mmap, trim);
		/* (its memory said: aligned buffers of 1-8 MiB, 94 -> 112 MB
		 * at the most with it, went unsaid; new-user trial 46) */
		snprintf(fix->text, sizeof fix->text,
			 "keep blocks up to %s on the heap (mmap threshold) and "
			 "leave up to %s free at its top before trimming (trim "
			 "threshold); both must be set, because setting either "
			 "one stops glibc from adjusting the other; in exchange, "
			 "up to %s of freed memory stays resident at the heap's "
			 "top (--verify measures the most resident)%s",
			 mt_format_bytes((double)mmap, b1, sizeof b1),
			 mt_format_bytes((double)trim, b2, sizeof b2),
			 mt_format_bytes((double)trim, b2, sizeof b2),
			 capped ? ". Larger blocks stay mapped whatever the "
				  "threshold: this glibc takes none above 32 MiB"
				: "");
		/* (a buffer grown step by step reaches what its input makes
		 * it: a string grown by += to 868 KiB had 1 MiB proposed,
		 * 2.42 -> 0.41 s, and with a third more lines it went past,
		 * 4.32 -> 1.11 s where jemalloc took 0.66; new-user trial
		 * 29) */
		size_t at = strlen(fix->text);
		if (!capped && grows_past(x, 0) && at < sizeof fix->text)
			snprintf(fix->text + at, sizeof fix->text - at,
				 ". Sized to this run's blocks: the buffer "
				 "grown here reaches a size its input decides, "
				 "and one grown past %s is mapped again; giving "
				 "it its final size once holds for any input",
				 mt_format_bytes((double)mmap, b1, sizeof b1));
	}
	/* The trim threshold alone pins the mmap threshold at its default:
	 * offered only when the blocks that churn are below it anyway (else
	 * each of them is mapped and unmapped instead: measured 8x slower
	 * on a program of 1-16 MiB blocks). */
	if (block + (double)page_size > GLIBC_MMAP_THRESHOLD_DEFAULT)
		return;
	fix = mt_fix_add(x, MT_FIX_SETTING);
	if (fix) {
		snprintf(fix->setting, sizeof fix->setting,
			 "GLIBC_TUNABLES=glibc.malloc.trim_threshold=%llu", trim);
		snprintf(fix->text, sizeof fix->text,
			 "the trim threshold alone (%s): it stops the trimming; "
			 "it also pins the mmap threshold at its 128 KiB "
			 "default, which the blocks that churn are below",
			 mt_format_bytes((double)trim, b1, sizeof b1));
	}
}

/* The size of the blocks that churn, as mt_glibc_threshold_fixes takes
 * it. */
static double churning_block(const struct mt_call_figures *f)
{
	double block = f->large_allocs > 0 ? f->large_bytes / f->large_allocs : 0;
	return f->large_p95_bytes > block ? f->large_p95_bytes : block;
}

/* Does one of x's sites grow a buffer through sizes above `bytes`?
 * mimalloc maps a block above 16 MiB afresh unless one of the same size
 * was freed (40 blocks of one size, 16 to 33 MiB: 139 faults in all), so
 * a buffer grown through many sizes above it faults every page at each
 * step (measured, 6 rounds of a buffer grown in 120 steps, faults on
 * mimalloc against glibc: to 16 MiB 40k against 312k; to 20 MiB 712k
 * against 390k; to 30 MiB 2.0M against 577k; new-user trial 8: a table
 * grown by np.concatenate to 29 MiB, whose p95 class begins at 16 MiB). */
static bool grows_past(const struct mt_finding *x, double bytes)
{
	size_t i;
	json_t *site;
	json_array_foreach(x->sites, i, site) {
		json_t *large = json_object_get(site, "large");
		if (json_number_value(json_object_get(large, "max_bytes")) > bytes &&
		    mt_site_grows(site))
			return true;
	}
	return false;
}


/* NumPy's functions that join arrays into a new one at each call. */
static bool numpy_join(const char *fn)
{
	static const char *const joins[] = {"concatenate", "append", "hstack",
					    "vstack", "stack", "column_stack",
					    "dstack", "block"};
	for (size_t i = 0; i < sizeof joins / sizeof *joins; i++)
		if (!strcmp(fn, joins[i]))
			return true;
	return false;
}

/* mimalloc 2.0 gives a freed page back to the kernel some 10 to 20 ms
 * after the free (measured: an 8 MiB block freed and allocated again
 * 10 ms later, 20 rounds, 2,174 faults; 20 ms, 4,225; 50 ms or more,
 * 20,606, every page each round).  Where the large blocks come further
 * apart than that, it keeps them only with a longer delay:
 * MIMALLOC_DECOMMIT_DELAY (2.0's name; MIMALLOC_RESET_DELAY, the old one,
 * warns: new-user trial 26), four times their mean interval (new-user
 * trial 10: 7-9 MiB
 * arrays 40 ms apart, 49k faults on glibc, 76k on mimalloc, 4.6k with a
 * delay of 256 ms). */
static void mimalloc_delay(struct mt_fix *fix, const struct mt_finding *x,
			   const struct mt_call_figures *f)
{
	enum { KEPT_MS = 10 }; /* (kept, measured, a free 10 ms before) */
	/* (small blocks that churn come and go a few microseconds apart:
	 * the large ones' pace says nothing of them, and a delay changed
	 * nothing on two such programs, the default had no churn; new-user
	 * trial 21) */
	if (x->small_blocks || f->large_allocs <= 0 || f->time_min_s <= 0)
		return;
	double interval_ms = 1e3 * f->time_min_s / f->large_allocs;
	if (interval_ms <= KEPT_MS)
		return;
	unsigned long long delay = mt_pow2_at_least(4 * interval_ms);
	if (delay > 60000)
		return; /* (minutes apart: no delay keeps them sensibly) */
	snprintf(fix->setting, sizeof fix->setting, "MIMALLOC_DECOMMIT_DELAY=%llu",
		 delay);
	snprintf(fix->text, sizeof fix->text,
		 "run on mimalloc, which keeps freed memory for reuse, here "
		 "for %llu ms: by default it gives it back 10 to 20 ms after "
		 "a free, and a large block is allocated every %.0f ms on "
		 "average (MIMALLOC_DECOMMIT_DELAY=%llu memtrace run --backend "
		 "mimalloc -- CMD)",
		 delay, interval_ms, delay);
}

/* mimalloc 2.0 maps a block above 16 MiB afresh each time, unless it has
 * memory reserved up front (MIMALLOC_RESERVE_OS_MEMORY, an arena whose
 * freed blocks it keeps): a 48 MiB frame and 1-3 MiB tiles, 25 rounds,
 * 1.04 s and 308k faults, with 64 MiB to 1 GiB reserved 0.33 s and 13k
 * faults, the most resident the same 53 MiB (new-user trial 37).
 * Reserved, not resident: twice the process's peak, rounded up. */
#define MIMALLOC_MAPS_AFRESH (16 << 20)

void mt_mimalloc_reserve(struct mt_fix *fix, const struct mt_call_figures *f)
{
	double mib = fmax(64, 2 * f->peak_rss / (1 << 20));
	snprintf(fix->setting, sizeof fix->setting,
		 "MIMALLOC_RESERVE_OS_MEMORY=%lluMiB", mt_pow2_at_least(mib));
	bool switched = fix->kind == MT_FIX_BACKEND;
	char run[sizeof fix->setting + 64] = "";
	if (switched)
		snprintf(run, sizeof run, "%s memtrace run --backend mimalloc -- CMD; ",
			 fix->setting);
	snprintf(fix->text, sizeof fix->text,
		 "%smemory reserved up front, from which mimalloc serves "
		 "blocks above 16 MiB and keeps them when freed, instead of "
		 "mapping each afresh (%sreserved address space, not resident "
		 "memory)",
		 switched ? "run on mimalloc with " : "", run);
}

void mt_backend_fixes(struct mt_finding *x, const char *current, double block,
		      const struct mt_call_figures *f)
{
	/* Each with the largest block it keeps when freed (measured, 40
	 * blocks allocated, written and freed in turn: tcmalloc 2.10 faults
	 * each page about once up to 256 MiB; mimalloc 2.0.9 maps a block
	 * above 16 MiB afresh each time, as jemalloc purges one of 8 MiB or
	 * more). */
	static const struct {
		const char *name;
		double keeps_up_to;
	} keepers[] = {{"tcmalloc", 1e300}, {"mimalloc", MIMALLOC_MAPS_AFRESH}};
	/* (the larger: a buffer grown by doubling to 32 MiB, whose p95 of
	 * large blocks was below 16 MiB, had mimalloc proposed, and it took
	 * 4x the time: new-user trial 5) */
	block = fmax(block, churning_block(f));
	/* Blocks grown by realloc, which glibc's mremap grows in place
	 * (the pages stay, nothing is copied): tcmalloc and mimalloc copy
	 * each step into a new block.  A buffer grown by 64 KiB steps to 64
	 * MiB took 0.29 s on glibc, 0.47 s and 3x the memory on tcmalloc,
	 * which was proposed (new-user trial 17). */
	if (f->remap_grow > 0 && f->remap_grow >= 0.5 * f->large_allocs)
		return;
	for (size_t i = 0; i < 2; i++) {
		bool mimalloc = strcmp(keepers[i].name, "mimalloc") == 0;
		bool past = !x->small_blocks && (block > keepers[i].keeps_up_to ||
						 grows_past(x, keepers[i].keeps_up_to));
		/* (mimalloc keeps them with memory reserved; not a buffer
		 * grown, whose steps it copies) */
		bool reserve = mimalloc && past && !grows_past(x, keepers[i].keeps_up_to);
		if ((current && strcmp(current, keepers[i].name) == 0) ||
		    (past && !reserve))
			continue;
		struct mt_fix *fix = mt_fix_add(x, MT_FIX_BACKEND);
		if (!fix)
			return;
		fix->backend = keepers[i].name;
		if (reserve) {
			mt_mimalloc_reserve(fix, f);
			continue;
		}
		snprintf(fix->text, sizeof fix->text,
			 "run on %s, which keeps freed memory for reuse instead "
			 "of handing it back at once (memtrace run --backend %s)",
			 keepers[i].name, keepers[i].name);
		if (strcmp(keepers[i].name, "mimalloc") == 0)
			mimalloc_delay(fix, x, f);
	}
}

void mt_reuse_fix(struct mt_finding *x, const struct mt_rule_input *in,
		  bool in_place)
{
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_CODE);
	if (!fix)
		return;
	if (x->small_blocks) {
		snprintf(fix->text, sizeof fix->text,
			 "keep the many small objects for reuse instead of "
			 "freeing them all and allocating them again: reuse the "
			 "structure itself, or its nodes from a free list or "
			 "pool%s",
			 /* (the blocks a library call returns too: a line
			  * compressing buffers one by one churned with the
			  * bytes zlib.compress made, and no container was to
			  * be kept; new-user trial 21) */
			 in->python ? " (in Python: keep and clear the "
				      "containers rather than building new ones; "
				      "where a library call makes them, reuse what "
				      "it returns, or call it less often with more "
				      "at a time)"
				    : "");
		return;
	}
	json_t *top = json_object_get(json_array_get(x->sites, 0), "large");
	double frees = json_number_value(json_object_get(top, "frees"));
	if (frees > 0 &&
	    json_number_value(json_object_get(top, "freed_elsewhere")) >= 0.5 * frees) {
		/* Made on one thread, freed on another (a producer's
		 * messages, a consumer's frees): no result to write in place;
		 * the buffers can go back to the thread that makes them. */
		snprintf(fix->text, sizeof fix->text,
			 "the blocks are made on one thread and freed on "
			 "another: hand them back for reuse instead (a pool or "
			 "free list of buffers the consumer returns them to and "
			 "the producer takes them from), so that the same few "
			 "large blocks go round");
		return;
	}
	/* NumPy's out= where NumPy made the blocks: the finding's top site,
	 * or without sites (a region's) any of the run's (a file read into
	 * bytes, in a program that imports NumPy, is not an array's). */
	json_t *first = json_array_get(x->sites, 0);
	bool numpy = first ? mt_site_in_numpy(first) : in->numpy;
	/* (the line that gives the blocks back: the one to change) */
	char at[512], given_back[600] = "";
	if (first && mt_site_release_label(first, at, sizeof at))
		snprintf(given_back, sizeof given_back, "; the blocks are given back at %s", at);
	if (mt_site_grows(first)) {
		/* Keeping the buffer first: the block freed each round is the
		 * cost, not only its growth (measured on a C++ vector grown by
		 * push_back in each of 60 rounds: reserve() alone 250k -> 246k
		 * faults; the vector kept across the rounds, 10k). */
		snprintf(fix->text, sizeof fix->text, "%s%s",
			 in->python
				 ? "give the buffer its final size once instead "
				   "of growing it step by step: preallocate the "
				   "array and fill slices of it, or collect the "
				   "pieces in a list and concatenate or join them "
				   "once at the end (np.concatenate, np.append, a "
				   "bytes or str += in a loop each make a larger "
				   "copy at every step); a list or dict filled "
				   "item by item grows its own storage the same "
				   "way, which only an allocator setting or "
				   "backend changes"
				 : "keep the buffer and its capacity across uses "
				   "(clear it, do not free it: a vector, string or "
				   "hash table kept outside the loop, or passed in), "
				   "so that it is grown once in the run; and give it "
				   "its final size up front (reserve() a vector or "
				   "an unordered_map, size an array from a known or "
				   "estimated count) instead of growing it step by "
				   "step",
			 given_back);
		return;
	}
	/* (np.fft and most of numpy.linalg take no out=: new-user trial
	 * 17; said where a site calls one, not to a program that never
	 * does: new-user trial 25) */
	const char *no_out = NULL, *joins = NULL;
	bool pads = false;
	size_t i;
	json_t *site;
	json_array_foreach(x->sites, i, site) {
		json_t *f = mt_site_called_frame(json_object_get(site, "stack"));
		const char *file = json_string_value(json_object_get(f, "file"));
		const char *fn = json_string_value(json_object_get(f, "function"));
		if (!file || !fn || !strstr(file, "/numpy/"))
			continue;
		if (!no_out && (strstr(file, "/numpy/fft/") || strstr(file, "/numpy/linalg/")))
			no_out = fn;
		else if (!strcmp(fn, "pad"))
			pads = true;
		else if (!joins && numpy_join(fn))
			joins = fn;
	}
	char numpy_text[896];
	snprintf(numpy_text, sizeof numpy_text,
		 " (with NumPy arrays: the out= argument of the ufuncs and of "
		 "the functions that take one, e.g. np.multiply(x, y, out=x), "
		 "np.add(a, b, out=c)%s%s%s%s%s%s%s)",
		 no_out ? "; where a function takes none, as " : "",
		 no_out ? no_out : "",
		 no_out ? " here, fewer calls on larger arrays, such as one "
			  "call on a 2-D array along an axis, make fewer blocks"
			: "",
		 /* (the functions a site here calls that make a new array
		  * each call, and what takes their place: new-user trial
		  * 48's frames, np.pad and np.concatenate told only of the
		  * ufuncs' out=) */
		 pads ? "; np.pad makes a new array each call: make the padded "
			"array once (np.empty) and copy the data into its middle "
			"and edges by slice assignment"
		      : "",
		 joins ? "; " : "", joins ? joins : "",
		 joins ? " makes a new array each call: np.concatenate(..., "
			 "out=buf) writes into one made once (np.append, "
			 "np.hstack and np.vstack take no out=)"
		       : "");
	snprintf(fix->text, sizeof fix->text, "%s%s%s",
		 in_place ? "write the result into a buffer that is already "
			    "there instead of a new one, so one large block "
			    "serves where two were live"
			  : in->f->whole ? "allocate the buffers once and reuse "
					   "them, instead of freeing them and "
					   "allocating them again"
			  : "allocate the large buffers once and reuse them across "
			    "calls",
		 numpy ? numpy_text
		 /* (no sites, as in a killed process's recording: which
		  * objects the blocks are is not known; a NumPy program's
		  * np.concatenate was told of bytes and str; new-user trial
		  * 39) */
		 : in->python && !first
			 ? " (in Python: for NumPy arrays, the out= argument of "
			   "the ufuncs; for bytes and str, a bytearray written "
			   "into by slice assignment or readinto)"
		 : in->python
			 /* (bytes.join, bytes.replace: no out= there; new-user
			  * trial 11) */
			 ? " (in Python, bytes and str operations make a new "
			   "object each time: keep a bytearray and write into "
			   "it, by slice assignment or readinto, or work on the "
			   "data in smaller pieces)"
			 : "",
		 given_back);
}
