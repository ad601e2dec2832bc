#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "shim_cost.h"

static double num(json_t *obj, const char *key)
{
	return json_number_value(json_object_get(obj, key));
}

static json_t *find_region(json_t *s, const char *name)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(s, "regions"), i, r) if (
		strcmp(json_string_value(json_object_get(r, "name")), name) == 0)
		return r;
	return NULL;
}

size_t mt_region_names(json_t *s, const char **names, size_t max)
{
	size_t i, n = 0;
	json_t *r;
	json_array_foreach(json_object_get(s, "regions"), i, r) if (n < max &&
								     num(r, "count") > 0)
		names[n++] = json_string_value(json_object_get(r, "name"));
	if (!n && max)
		names[n++] = MT_WHOLE_PROGRAM;
	return n;
}

static double sum_allocations(json_t *calls)
{
	static const char *const allocating[] = {
		"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
		"aligned_alloc", "memalign", "valloc", "pvalloc"};
	double n = 0;
	for (size_t i = 0; i < sizeof allocating / sizeof *allocating; i++)
		n += num(calls, allocating[i]);
	return n;
}

/* A large class's weight: its requests, or their bytes (each counted at
 * the class's middle). */
static double class_weight(json_t *c, bool by_bytes)
{
	double n = num(c, "count");
	return by_bytes ? n * (num(c, "min") + num(c, "max")) / 2 : n;
}

/* The lower bound of the size class where 95% of the large requests
 * (MT_LARGE_BYTES or more), or of their bytes, are reached, from the
 * smallest up. */
static double large_p95(json_t *histogram, bool by_bytes)
{
	double total = 0, seen = 0;
	size_t i;
	json_t *c;
	json_array_foreach(histogram, i, c) if (num(c, "min") >= 128 * 1024)
		total += class_weight(c, by_bytes);
	json_array_foreach(histogram, i, c) {
		if (num(c, "min") < 128 * 1024)
			continue;
		seen += class_weight(c, by_bytes);
		if (seen >= 0.95 * total)
			return num(c, "min");
	}
	return 0;
}

/* The bytes of the requests in size classes from `from` bytes up to
 * `below` (each class counted at its middle). */
static double class_bytes(json_t *histogram, double from, double below)
{
	double bytes = 0;
	size_t i;
	json_t *c;
	json_array_foreach(histogram, i, c) {
		if (num(c, "min") >= from && num(c, "min") < below)
			bytes += class_weight(c, true);
	}
	return bytes;
}

/* The share of the large requests' bytes in size classes of `from` bytes
 * or more. */
static double large_share_from(json_t *histogram, double from)
{
	double all = class_bytes(histogram, 128 * 1024, INFINITY);
	return all > 0 ? class_bytes(histogram, from, INFINITY) / all : 0;
}

/* The shim's own time per call, estimated, and its share of the CPU: the
 * summary's for the whole run; a region's calls at the cost per call the
 * shim measured for its backend and mode (its threads and start-up are the
 * whole run's). */
static void shim_cost(json_t *s, json_t *r, bool whole,
		      struct mt_call_figures *f)
{
	json_t *k = json_object_get(s, "shim_cost");
	if (!json_is_object(k))
		return;
	f->shim_known = true;
	if (whole) {
		f->shim_s = num(k, "estimated_s");
		f->shim_share = num(k, "share_of_run");
		return;
	}
	const char *mode = json_string_value(json_object_get(k, "mode"));
	const struct mt_shim_cost_row *row = mt_shim_cost_row(
		json_string_value(json_object_get(json_object_get(s, "backend"),
						  "name")),
		mode && strcmp(mode, "trace") == 0);
	json_t *calls = json_object_get(r, "calls");
	json_t *large = json_object_get(r, "large");
	json_t *sys = json_object_get(r, "syscalls");
	json_t *interposed = json_object_get(r, "syscalls_interposed");
	double heap = num(calls, "free") + num(calls, "malloc_usable_size") +
		      sum_allocations(calls), syscalls = 0, kernel = 0;
	for (int i = 0; i < MT_SYS_COUNT; i++) {
		double seen = num(interposed, mt_sys_names[i]);
		syscalls += seen;
		kernel += fmax(0, num(sys, mt_sys_names[i]) - seen);
	}
	f->shim_s = mt_shim_cost_of(row, heap,
				    num(large, "allocations") + num(large, "frees"),
				    syscalls, kernel) / f->calls;
	double cpu = f->user_s + f->system_s;
	double of = cpu > 0 ? cpu : f->time_median_s;
	f->shim_share = of > 0 ? f->shim_s / of : 0;
}

/* struct mt_call_figures' mmap_threshold_ceiling, of the backend's
 * version. */
static double threshold_ceiling(const json_t *backend)
{
	const char *v = json_string_value(json_object_get(backend, "version"));
	unsigned major, minor;
	if (v && sscanf(v, "%u.%u", &major, &minor) == 2 &&
	    (major > 2 || (major == 2 && minor >= 36)))
		return 0;
	return 32 << 20;
}

/* glibc's own madvise calls over the run, from the kernel's count: the
 * calls less the program's own and the one each thread but the main one
 * makes as it ends (its stack's unused part).  glibc's allocator makes no
 * others than its thread heaps' shrinks and malloc_trim's purges.  -1
 * where the count is not the kernel's, the backend not glibc, or glibc
 * advises huge pages too (glibc.malloc.hugetlb=1). */
static double glibc_madvise_calls(json_t *s, json_t *src,
				  const struct mt_call_figures *f)
{
	const char *backend = json_string_value(
		json_object_get(json_object_get(s, "backend"), "name"));
	const char *source = json_string_value(json_object_get(
		json_object_get(src, "syscalls"), "madvise"));
	if (!backend || strcmp(backend, "glibc") || !source ||
	    strcmp(source, "kernel") || f->hugepage_advice > 0)
		return -1;
	return f->syscalls[MT_SYS_MADVISE] - f->syscalls_own[MT_SYS_MADVISE] -
	       fmax(0, num(s, "threads") - 1);
}

bool mt_figures_of(json_t *s, const char *name, struct mt_call_figures *f)
{
	bool whole = strcmp(name, MT_WHOLE_PROGRAM) == 0;
	json_t *r = whole ? s : find_region(s, name);
	memset(f, 0, sizeof *f);
	if (!r)
		return false;

	double calls = whole ? 1 : num(r, "count");
	if (calls <= 0)
		return false;
	f->region = name;
	f->calls = calls;
	f->whole = whole;
	json_t *wall = json_object_get(r, "wall_s");
	f->time_min_s = whole ? num(s, "wall_s") : num(wall, "min");
	f->time_median_s = whole ? num(s, "wall_s") : num(wall, "median");

	json_t *cpu = json_object_get(r, "cpu_s");
	f->user_s = num(cpu, "user") / calls;
	f->system_s = num(cpu, "system") / calls;
	json_t *pf = json_object_get(r, "page_faults");
	f->faults = (num(pf, "minor") + num(pf, "major")) / calls;

	json_t *sys = json_object_get(r, "syscalls");
	json_t *by = json_object_get(r, "syscalls_by_allocator");
	json_t *inf = json_object_get(r, "syscalls_inferred");
	json_t *bytes = json_object_get(r, "syscall_bytes");
	json_t *inferred_bytes = json_object_get(r, "syscall_bytes_inferred");
	json_t *interposed = json_object_get(r, "syscalls_interposed");
	json_t *bytes_by = json_object_get(r, "syscall_bytes_by_allocator");
	for (int i = 0; i < MT_SYS_COUNT; i++) {
		f->syscalls[i] = num(sys, mt_sys_names[i]) / calls;
		f->syscalls_by_allocator[i] = num(by, mt_sys_names[i]) / calls;
		f->syscalls_own[i] = fmax(0, num(interposed, mt_sys_names[i]) / calls -
						     f->syscalls_by_allocator[i]);
		f->syscalls_inferred[i] = num(inf, mt_sys_names[i]) / calls;
		f->syscall_bytes[i] = (num(bytes, mt_sys_names[i]) +
				       num(inferred_bytes, mt_sys_names[i])) /
				      calls;
		f->syscall_bytes_own[i] =
			bytes_by ? fmax(0, num(bytes, mt_sys_names[i]) -
						   num(bytes_by, mt_sys_names[i])) /
					   calls
				 : -1;
	}
	json_t *src = json_object_get(r, "sources");
	const char *brk_source = json_string_value(
		json_object_get(json_object_get(src, "syscalls"), "brk"));
	f->kernel = brk_source && strcmp(brk_source, "kernel") == 0;
	f->fault_source = json_string_value(json_object_get(src, "page_faults"));

	json_t *again = json_object_get(r, "own_purges_again");
	f->own_purges_again = again ? num(again, "count") / calls : -1;
	f->own_purged_again_bytes = again ? num(again, "bytes") / calls : -1;
	json_t *adv = json_object_get(r, "madvise_by_advice");
	f->dontneed = num(adv, "MADV_DONTNEED") / calls;
	f->free_advice = num(adv, "MADV_FREE") / calls;
	f->hugepage_advice = num(adv, "MADV_HUGEPAGE") / calls;
	json_t *adv_bytes = json_object_get(r, "madvise_bytes_by_advice");
	f->purged_bytes = (num(adv_bytes, "MADV_DONTNEED") +
			   num(adv_bytes, "MADV_FREE")) /
			  calls;
	/* The advice totals hold the program's own madvise calls too: where
	 * it made some, the allocator purged at most its own madvise bytes,
	 * in at most its own calls (a program that madvised its own 32 MiB
	 * mapping 40 times had them put on jemalloc's 16 calls of 35.6 MB:
	 * new-user trial 13). */
	/* (glibc's thread heaps' shrinks are its own too, out of the shim's
	 * sight, inferred: a NumPy program, which madvises its arrays for
	 * huge pages, read "MADV_DONTNEED 0" in compare against 146 of
	 * them; new-user trial 27) */
	if (f->syscalls_own[MT_SYS_MADVISE] > 0) {
		double mine = (num(json_object_get(r, "syscall_bytes_by_allocator"),
				   "madvise") +
			       num(inferred_bytes, "madvise")) / calls;
		double n = f->syscalls_by_allocator[MT_SYS_MADVISE] +
			   num(inf, "madvise") / calls;
		f->own_purges = fmin(f->syscalls_own[MT_SYS_MADVISE],
				     fmax(0, f->dontneed + f->free_advice - n));
		f->own_purged_bytes = f->own_purges > 0
					      ? fmax(0, f->purged_bytes - mine)
					      : 0;
		f->purged_bytes = fmin(f->purged_bytes, mine);
		f->dontneed = fmin(f->dontneed, n);
		f->free_advice = fmin(f->free_advice, n - f->dontneed);
	}

	/* glibc's madvise inside the program's malloc_trim calls, out of the
	 * shim's sight but for the resident memory they took away: each call
	 * that gave some back is one purge of the allocator's (a program
	 * calling malloc_trim(0) after each round of 200k small blocks under a
	 * kept one: 610k faults, 70% of its CPU, and no finding; new-user
	 * trial 14). */
	json_t *trims = json_object_get(r, "malloc_trim");
	f->trim_purges = num(trims, "purges") / calls;
	f->trim_purged_bytes = num(trims, "purged_bytes") / calls;
	json_t *zeroing = json_object_get(r, "calloc_purges");
	f->calloc_purges = num(zeroing, "count") / calls;
	f->calloc_purged_bytes = num(zeroing, "bytes") / calls;
	f->dontneed += f->trim_purges;
	f->purged_bytes += f->trim_purged_bytes;
	f->syscalls_by_allocator[MT_SYS_MADVISE] += f->trim_purges;

	/* On glibc the only madvise inferred is a thread heap's shrink. */
	f->thread_heap_shrinks = num(inf, "madvise") / calls;
	f->thread_heap_shrink_bytes = num(inferred_bytes, "madvise") / calls;
	/* The shim does not look for a shrink at every free (shim/
	 * glibc_heap.h: not those of tcache-sized chunks); with no
	 * malloc_trim call, the kernel's count of glibc's madvise calls is
	 * the shrinks, the unseen ones of the seen ones' mean size (4 threads
	 * of blocks from 16 B to 4 KB: 2694 seen, 3072 made; new-user trial
	 * 21). */
	double by_glibc = whole ? glibc_madvise_calls(s, src, f) : -1;
	if (num(trims, "calls") == 0 && f->thread_heap_shrinks > 0 &&
	    by_glibc > f->thread_heap_shrinks) {
		f->thread_heap_shrink_bytes *= by_glibc / f->thread_heap_shrinks;
		f->thread_heap_shrinks = by_glibc;
	}
	/* The same for malloc_trim's: the shim counts one a call that gave
	 * memory back, glibc makes one a free stretch of the heap (20,000
	 * blocks of 200 B to 2 KB freed and trimmed, 300 times: 300 counted,
	 * 6,600 made; new-user trial 23), where no thread heap's shrink was
	 * seen (one arena at work: none of the count is theirs). */
	f->trim_madvise = f->trim_purges;
	if (f->trim_purges > 0 && f->thread_heap_shrinks == 0 &&
	    by_glibc > f->trim_purges) {
		f->dontneed += by_glibc - f->trim_purges;
		f->syscalls_by_allocator[MT_SYS_MADVISE] += by_glibc - f->trim_purges;
		f->trim_madvise = by_glibc;
	}

	json_t *brk = json_object_get(r, "brk");
	f->brk_grow = num(brk, "grow") / calls;
	f->brk_shrink = num(brk, "shrink") / calls;
	f->brk_grow_bytes = num(brk, "grow_bytes") / calls;
	f->brk_shrink_bytes = num(brk, "shrink_bytes") / calls;

	f->allocations = sum_allocations(json_object_get(r, "calls")) / calls;
	f->bytes_allocated = num(json_object_get(r, "bytes"), "allocated") / calls;
	json_t *large = json_object_get(r, "large");
	f->large_allocs = num(large, "allocations") / calls;
	f->large_bytes = num(large, "bytes") / calls;
	f->large_frees = num(large, "frees") / calls;
	json_t *moves = json_object_get(r, "realloc_moves");
	f->realloc_moves = num(moves, "count") / calls;
	f->realloc_copied_bytes = num(moves, "copied_bytes") / calls;
	f->calloc_bytes = num(json_object_get(r, "bytes_requested"), "calloc") / calls;
	json_t *touched = json_object_get(r, "unmapped_touched");
	f->unmapped_touched = num(touched, "bytes") / calls;
	f->unmapped_touched_huge = num(touched, "huge_bytes") / calls;
	f->unmapped_touched_by_allocator =
		num(touched, "bytes_by_allocator") / calls;
	f->unmapped_touched_huge_by_allocator =
		num(touched, "huge_bytes_by_allocator") / calls;
	json_t *purged = json_object_get(r, "purged_touched");
	f->purged_touched = num(purged, "bytes") / calls;
	f->purged_touched_huge = num(purged, "huge_bytes") / calls;
	f->purged_touched_by_allocator = num(purged, "bytes_by_allocator") / calls;
	f->purged_touched_huge_by_allocator =
		num(purged, "huge_bytes_by_allocator") / calls;
	json_t *remaps = json_object_get(r, "remaps");
	f->remap_grow = num(remaps, "grow") / calls;
	f->remap_grow_bytes = num(remaps, "grow_bytes") / calls;
	f->remap_shrink = num(remaps, "shrink") / calls;
	f->remap_shrink_bytes = num(remaps, "shrink_bytes") / calls;
	f->trim_calls = num(trims, "calls") / calls;
	f->trim_shrinks = num(trims, "shrinks") / calls;
	f->trim_shrink_bytes = num(trims, "shrink_bytes") / calls;
	f->large_max_live = num(large, "max_live");
	f->large_p95 = large_p95(json_object_get(r, "size_histogram"), false);
	f->large_p95_bytes = large_p95(json_object_get(r, "size_histogram"), true);
	f->large_share_32m = large_share_from(json_object_get(r, "size_histogram"),
					      32 << 20);
	/* (the large blocks' exact; the smaller classes' at their middle, no
	 * more than all the small blocks took: 64 KiB blocks are the bottom
	 * of theirs) */
	f->page_block_bytes =
		f->large_bytes +
		fmin(class_bytes(json_object_get(r, "size_histogram"), 4096,
				 128 * 1024) / calls,
		     fmax(f->bytes_allocated - f->large_bytes, 0));
	f->peak_live = num(json_object_get(s, "bytes"), "peak_live");
	f->peak_rss = num(s, "peak_rss_bytes");
	json_t *res = json_object_get(s, "resident");
	f->resident_samples = num(res, "samples");
	f->kept_bytes = num(res, "kept_bytes_max");
	f->anon_at_kept = num(res, "anon_bytes_at_kept_max");
	f->live_later = num(res, "live_bytes_later");
	f->live_at_kept = json_object_get(res, "live_bytes_at_kept_max")
				  ? num(res, "live_bytes_at_kept_max")
				  : f->live_later;
	f->program_mapped_at_kept = num(res, "program_mapped_bytes_at_kept_max");
	f->small_live_max = json_object_get(res, "small_live_bytes_max")
				    ? num(res, "small_live_bytes_max")
				    : -1;
	f->large_live_at_kept = json_object_get(res, "large_live_bytes_at_kept_max")
					? num(res, "large_live_bytes_at_kept_max")
					: -1;
	f->kept_sustained = num(res, "kept_bytes_sustained");
	f->kept_s = num(res, "kept_ms") / 1e3;
	f->sampled_s = num(res, "sampled_ms") / 1e3;
	f->anon_max = num(res, "anon_bytes_max");
	f->anon_exit = num(res, "anon_bytes_exit");
	f->live_exit = num(res, "live_bytes_exit");
	f->threads = num(s, "threads");
	json_t *g = json_object_get(s, "glibc_thresholds");
	f->glibc_thresholds = g != NULL;
	f->mmap_threshold = num(g, "mmap");
	f->trim_threshold = num(g, "trim");
	f->threshold_raises = num(g, "raises");
	f->thresholds_dynamic = json_is_true(json_object_get(g, "dynamic"));
	f->thresholds_by_mallopt = json_is_true(json_object_get(g, "by_mallopt"));
	if (whole) {
		json_t *gone = json_object_get(s, "thread_heaps_deleted");
		f->heaps_deleted = num(gone, "count");
		f->heaps_deleted_bytes = num(gone, "bytes");
		/* (among the inferred munmaps, which are otherwise the mapped
		 * blocks glibc frees: a heap deleted is no block mapped and
		 * unmapped, and was an mmap-churn beside thread-heap-churn) */
		f->syscalls_inferred[MT_SYS_MUNMAP] =
			fmax(0, f->syscalls_inferred[MT_SYS_MUNMAP] - f->heaps_deleted);
		f->syscall_bytes[MT_SYS_MUNMAP] =
			fmax(0, f->syscall_bytes[MT_SYS_MUNMAP] - f->heaps_deleted_bytes);
	}
	f->mmap_threshold_ceiling = threshold_ceiling(json_object_get(s, "backend"));
	shim_cost(s, r, whole, f);
	return true;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of the double at `offset` in each of n figures. */
static double median_at(const struct mt_call_figures *runs, size_t n,
			size_t offset)
{
	double v[64];
	if (n > 64)
		n = 64;
	for (size_t i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)&runs[i] + offset);
	qsort(v, n, sizeof *v, by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void mt_figures_combine(const struct mt_call_figures *runs, size_t n,
			struct mt_call_figures *out)
{
	*out = runs[0];
	if (n < 2)
		return;
	/* Every double field, as the median over runs. */
	for (size_t off = offsetof(struct mt_call_figures, calls);
	     off < offsetof(struct mt_call_figures, kernel); off += sizeof(double))
		*(double *)((char *)out + off) = median_at(runs, n, off);
	out->time_min_s = runs[0].time_min_s;
	for (size_t i = 1; i < n; i++)
		if (runs[i].time_min_s < out->time_min_s)
			out->time_min_s = runs[i].time_min_s;
}
