/* mmap-churn: blocks of the same size are mapped and unmapped, call after
 * call, each use faulting its pages anew. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

/* Over a whole run, the mappings that churn are the allocator's, if they
 * do, or else the program's own (the rest: its files, its own anonymous
 * memory, CPython's arenas).  Not paired by count: the loader's and the
 * interpreter's file mappings, made once, are among the program's; the
 * repetition rules tell churn from them.  The program's bytes given back
 * are those the interposers saw it unmap, or in older summaries the
 * unmaps' share. */
static bool whole_run_churns(const struct mt_rule_input *in, double *maps,
			     double *unmaps, double *allocator,
			     double *unmapped, struct mt_repetition *r)
{
	const struct mt_call_figures *f = in->f;
	double a_maps = f->syscalls_by_allocator[MT_SYS_MMAP] +
			f->syscalls_inferred[MT_SYS_MMAP];
	double a_unmaps = f->syscalls_by_allocator[MT_SYS_MUNMAP] +
			  f->syscalls_inferred[MT_SYS_MUNMAP];
	/* A mapped chunk that glibc's realloc grows in place takes fresh
	 * pages, one it shrinks gives pages back: a mapping and an unmapping
	 * of part of it (a stream's buffer filled, emptied and kept: 13k
	 * mremaps, one mmap; new-user trial 10) */
	double cycles = fmin(a_maps + f->remap_grow, a_unmaps + f->remap_shrink);
	double all = fmax(*unmaps, a_unmaps), bytes = *unmapped;
	/* The program's own: what the interposers saw it call, where they
	 * saw any (the kernel's count less the allocator's undercounts them
	 * when the allocator mapped before the kernel counters started). */
	const double *own = f->syscalls_own;
	double p_maps = own[MT_SYS_MMAP] > 0 ? own[MT_SYS_MMAP]
					     : fmax(0, *maps - a_maps);
	double p_unmaps = own[MT_SYS_MUNMAP] > 0 ? own[MT_SYS_MUNMAP]
						 : fmax(0, *unmaps - a_unmaps);

	*unmapped = mt_allocator_unmapped_bytes(f);
	if (mt_repeats_touched(in, cycles, *unmapped,
			       f->unmapped_touched_by_allocator,
			       f->unmapped_touched_huge_by_allocator, r)) {
		*maps = a_maps;
		*unmaps = a_unmaps;
		*allocator = a_maps;
		return true;
	}
	/* (the program's own bytes as seen, where the summary splits them:
	 * in proportion to the counts, jemalloc's two unmaps of its own made
	 * 60 of 64 MiB "61.9 MiB each"; new-user trial 18) */
	*unmapped = own[MT_SYS_MUNMAP] > 0 && f->syscall_bytes_own[MT_SYS_MUNMAP] >= 0
			    ? f->syscall_bytes_own[MT_SYS_MUNMAP]
			    : all > 0 ? bytes * p_unmaps / all : 0;
	*maps = p_maps;
	*unmaps = p_unmaps;
	*allocator = 0;
	return mt_repeats_touched(
		in, fmin(p_maps, p_unmaps), *unmapped,
		f->unmapped_touched - f->unmapped_touched_by_allocator,
		f->unmapped_touched_huge - f->unmapped_touched_huge_by_allocator,
		r);
}

/* CPython's arenas given up: Python's small objects from mimalloc
 * instead (PYTHONMALLOC=malloc), the setting alone there, mimalloc beside
 * it elsewhere.  Measured bare, on two programs of objects built and
 * dropped each round (new-user trials 27 and 29): mimalloc 1.28 -> 1.08 s
 * and 0.70 -> 0.62 s; tcmalloc 1.28 -> 1.22 s, then no change; jemalloc
 * 0.67 -> 0.70-0.73 s; glibc 1.28 -> 1.70 s and 0.69 -> 1.09 s, its own
 * malloc slower at them than the arenas.  On two others it hurt on
 * mimalloc too (new-user trial 40: records in dicts 1.34 -> 1.84 s, a
 * JSON round trip 1.47 -> 1.61 s): so it is offered to try, to be
 * measured, not as a fix. */
static void python_malloc_fixes(struct mt_finding *x, const char *current)
{
	static const char *const keepers[] = {"mimalloc"};
	if (strcmp(current, "mimalloc") == 0) {
		struct mt_fix *fix = mt_fix_add(x, MT_FIX_SETTING);
		if (fix) {
			snprintf(fix->setting, sizeof fix->setting,
				 "PYTHONMALLOC=malloc");
			snprintf(fix->text, sizeof fix->text,
				 "Python's small objects from %s, which keeps "
				 "freed memory for reuse, instead of CPython's "
				 "arenas: no more arenas mapped and unmapped, but "
				 "each small object's allocation a call of the C "
				 "allocator, which costs more than the arenas on "
				 "some programs",
				 current);
			fix->to_try = true;
		}
		return;
	}
	for (size_t i = 0; i < sizeof keepers / sizeof *keepers; i++) {
		struct mt_fix *fix = mt_fix_add(x, MT_FIX_BACKEND);
		if (!fix)
			return;
		fix->backend = keepers[i];
		snprintf(fix->setting, sizeof fix->setting, "PYTHONMALLOC=malloc");
		snprintf(fix->text, sizeof fix->text,
			 "run on %s with PYTHONMALLOC=malloc: Python's small "
			 "objects then come from %s, which keeps freed memory "
			 "for reuse, instead of CPython's arenas "
			 "(PYTHONMALLOC=malloc memtrace run --backend %s): no "
			 "more arenas mapped and unmapped, but each small "
			 "object's allocation a call of the C allocator, which "
			 "costs more than the arenas on some programs; on %s "
			 "the setting alone %s",
			 keepers[i], keepers[i], keepers[i], current,
			 strcmp(current, "glibc") == 0
				 ? "costs more than it saves"
				 : "was measured to save little or nothing");
		fix->to_try = true;
	}
}

struct mt_finding *mt_rule_mmap_churn(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	double maps = f->syscalls[MT_SYS_MMAP], unmaps = f->syscalls[MT_SYS_MUNMAP];
	double allocator = f->syscalls_by_allocator[MT_SYS_MMAP] +
			   f->syscalls_inferred[MT_SYS_MMAP];
	double unmapped = f->syscall_bytes[MT_SYS_MUNMAP];
	struct mt_repetition r;
	char b1[32], cost[2 * MT_TEXT];

	double mapped = f->syscall_bytes[MT_SYS_MMAP];
	if (f->whole) {
		if (!whole_run_churns(in, &maps, &unmaps, &allocator, &unmapped, &r))
			return NULL;
	} else if (maps < MT_CHURN_PER_CALL ||
		   /* mapped and unmapped alike: the same number and bytes */
		   fabs(maps - unmaps) > 0.25 * maps ||
		   (mapped > 0 && fabs(mapped - unmapped) > 0.25 * mapped) ||
		   !mt_repeats(in, unmaps, unmapped, &r)) {
		return NULL;
	}
	struct mt_finding *x = mt_finding_new("mmap-churn", in);
	if (!x)
		return NULL;
	/* (the allocator's chunks shrunk in place gave back part of it: the
	 * size is of the way that gave back more, unmapping or shrinking) */
	double shrinks = allocator > 0 ? f->remap_shrink : 0;
	double shrunk = shrinks > 0 ? f->remap_shrink_bytes : 0;
	double per_map = !f->whole ? (maps > 0 ? mapped / maps : 0)
			 : shrunk > unmapped - shrunk ? shrunk / shrinks
			 : unmaps > 0 ? (unmapped - shrunk) / unmaps
				      : 0;
	double pages = mapped / (double)in->page_size;
	double share = mt_system_share(f);
	bool allocators = allocator >= (f->whole ? 0.5 * maps : MT_CHURN_PER_CALL);

	json_t *e = x->evidence;
	json_object_set_new(e, "mmap_per_call", json_real(maps));
	json_object_set_new(e, "munmap_per_call", json_real(unmaps));
	json_object_set_new(e, "mmap_by_allocator_per_call", json_real(allocator));
	json_object_set_new(e, "bytes_per_mapping", json_real(per_map));
	json_object_set_new(e, "pages_mapped_per_call", json_real(pages));
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	json_object_set_new(e, "share_of_time", json_real(share));

	static const char mechanism[] =
		"Unmapped memory goes back to the kernel, and the next mapping "
		"starts from fresh pages that fault on first touch";
	static const char own_mechanism[] =
		"Each new mapping faults its pages in again (a file's from the "
		"page cache, anonymous memory as fresh pages)";
	char remaps[256] = "";
	if (shrinks > 0) {
		char b2[32], b3[32];
		json_object_set_new(e, "remap_grow_per_call", json_real(f->remap_grow));
		json_object_set_new(e, "remap_shrink_per_call", json_real(shrinks));
		json_object_set_new(e, "remap_shrink_bytes_per_call",
				    json_real(f->remap_shrink_bytes));
		snprintf(remaps, sizeof remaps,
			 ", and realloc resized mapped blocks in place (mremap): "
			 "grew them %.0f times, by %s, and shrank them %.0f "
			 "times, giving %s back",
			 f->remap_grow,
			 mt_format_bytes(f->remap_grow_bytes, b2, sizeof b2),
			 shrinks,
			 mt_format_bytes(f->remap_shrink_bytes, b3, sizeof b3));
	}
	if (f->whole) {
		mt_repetition_evidence(e, &r);
		snprintf(x->explanation, sizeof x->explanation,
			 "Over the run, %s mapped %.0f blocks of memory and "
			 "unmapped %.0f%s (%s each on average as they were "
			 "%s). %s: %s%s",
			 allocators ? "the allocator" : "the program itself",
			 maps, unmaps, remaps,
			 mt_format_bytes(per_map, b1, sizeof b1),
			 shrinks > 0 ? "given back" : "unmapped",
			 allocators ? mechanism : own_mechanism,
			 /* (a program's own mapping of a file is given back
			  * whole, its pages never touched too) */
			 /* (and where the pages given back are many times
			  * those faulted again: a 64 MiB grid a frame, some
			  * 700 of its pages written, "gave back 4836837 pages"
			  * read as memory resident; new-user trial 45) */
			 mt_repetition_cost(f, &r,
					    r.by_touch ||
							    (allocators &&
							     r.given_back_pages <=
								     2 * r.refaults)
						    ? "the unmappings"
						       : "the unmappings (of the "
							 "mappings' whole size, "
							 "touched or not)",
					    cost, sizeof cost),
			 allocators ? ""
			 : in->python
				 ? " These are the program's own mappings: in a "
				   "Python program, files, or CPython's object "
				   "allocator, which maps 1 MiB arenas itself "
				   "and unmaps each once it is empty; no setting "
				   "of the C allocator alone changes them, but "
				   "PYTHONMALLOC=malloc hands Python's small "
				   "objects to the C allocator instead of the "
				   "arenas (below)."
				 : " These are the program's own mappings "
				   "(files or its own anonymous memory): no "
				   "allocator setting changes them.");
	} else {
		snprintf(x->explanation, sizeof x->explanation,
			 "Each call of %s maps %.2f blocks of memory and unmaps "
			 "%.2f (%s each; %.2f of the mappings per call are the "
			 "allocator's). %s: %.0f pages mapped and %.0f page "
			 "faults per call, %.2f ms of system time, %.0f%% of the "
			 "call.",
			 f->region, maps, unmaps,
			 mt_format_bytes(per_map, b1, sizeof b1), allocator,
			 mechanism, pages, f->faults, f->system_s * 1e3,
			 share * 100);
	}
	/* The sites of the blocks the allocator mapped, or of the code that
	 * made the program's own mappings. */
	static const char *const mapped_keys[] = {"mmap_bytes", "munmap_bytes",
						  NULL};
	static const char *const own_keys[] = {"own_mmap_bytes",
					       "own_munmap_bytes", NULL};
	mt_finding_sites(x, in, allocators ? mapped_keys : own_keys);
	enum mt_zeroing zeroing = allocators ? mt_calloc_zeroing(x, in, &r, false, true)
					   : MT_ZEROING_NONE;
	if (allocators && zeroing != MT_ZEROING_OUTWEIGHS) {
		int keepers = x->nfixes;
		if (strcmp(in->backend, "glibc") == 0)
			mt_glibc_threshold_fixes(x, f, in->page_size);
		mt_backend_fixes(x, in->backend, per_map, f);
		/* (blocks above 16 MiB, measured; not small blocks' segments
		 * given back, which were not) */
		if (strcmp(in->backend, "mimalloc") == 0 && per_map > 16 << 20 &&
		    !x->small_blocks) {
			struct mt_fix *fix = mt_fix_add(x, MT_FIX_SETTING);
			if (fix)
				mt_mimalloc_reserve(fix, f);
		}
		for (int i = keepers; zeroing == MT_ZEROING_WEIGHS && i < x->nfixes; i++)
			x->fixes[i].to_try = true;
	}
	if (zeroing != MT_ZEROING_NONE) {
		/* (a buffer reused whole would be zeroed whole: its fix said) */
	} else if (allocators || !f->whole) {
		mt_reuse_fix(x, in, false);
	} else {
		/* PYTHONMALLOC=malloc moves CPython's small objects from its
		 * arenas to the C allocator: on glibc it costs more than the
		 * mappings it saves (1.28 -> 1.70 s of CPU), on an allocator
		 * that keeps freed memory and serves small blocks fast the
		 * churn goes (mimalloc 1.08 s, tcmalloc 1.22 s, system time
		 * 0.33 -> 0.05 s; new-user trial 27).  Nor is a container kept
		 * and cleared a fix: a dict of 120,000 entries cleared and
		 * refilled unmapped as many arenas as one built anew (397
		 * against 381; new-user trial 18). */
		struct mt_fix *fix = mt_fix_add(x, MT_FIX_CODE);
		if (fix)
			snprintf(fix->text, sizeof fix->text, "%s",
				 in->python
					 ? "keep the objects themselves alive across "
					   "rounds, updating their values in place, "
					   "rather than building new ones and dropping "
					   "the old: an arena is unmapped once every "
					   "object in it is freed, and clearing a dict "
					   "or list frees its objects all the same; "
					   "where each "
					   "round needs new objects, this is CPython's "
					   "own cost, which only PYTHONMALLOC=malloc on "
					   "such an allocator may move (a file mapped with "
					   "mmap: map it once)"
					 : "map the file or memory once and keep the "
					   "mapping, instead of mapping and unmapping "
					   "it for each use");
		/* (the one to try last, after the sure ones) */
		if (in->python)
			python_malloc_fixes(x, in->backend);
	}
	return x;
}
