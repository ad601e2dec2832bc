/* memory-kept: memory, not time.  Resident anonymous memory far above what
 * the program needs, because the allocator keeps what was freed: the
 * samples of resident memory (the summary's "resident", common/resident.h)
 * say how much of it was neither mappings the program made itself (files,
 * an interpreter's arenas) nor ever live in the heap again, at the sample
 * where that was largest, and for how long.
 *
 * Memory kept for blocks the program allocates again is the allocator's
 * cache at work, not kept: a loop that frees and allocates its temporaries
 * has them counted as live.  And memory kept only for a moment costs
 * nothing: an interpreter's teardown frees everything while the allocator
 * still holds it, just before exit.  So the finding rests on the most
 * memory kept for a fifth of the run at least (kept_bytes_sustained). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

const char mt_kept_for_a_churn[] =
	" Giving it back sooner is not proposed: this run also churns (the "
	"finding above: memory given back and faulted in again), and sooner "
	"would make more of that.";

/* Less than this kept is not worth a finding on any machine, nor less
 * than a third of the process's anonymous memory at its most. */
#define KEPT_MIN_BYTES (32.0 * 1024 * 1024)

static double round_up(double n, double to)
{
	return ceil(n / to) * to;
}

/* What one live small block of `size` bytes keeps resident on `backend`
 * however its settings are: the unit of memory it gives back whole.
 * glibc: a page (free pages inside a heap are what malloc_trim gives
 * back); jemalloc 5.3: its slab, the least number of pages that its size
 * class (16 B apart up to 128 B, then four per doubling) divides (192 B:
 * 3 pages, 224 B: 7), and whole pages above 14 KiB; tcmalloc
 * (gperftools): a span, 8 KiB pages; mimalloc 2.0: its page, 64 KiB for
 * blocks up to 16 KiB, 512 KiB above.  0: not known. */
static double pin_unit(const char *backend, double size, double page)
{
	if (size <= 0)
		return 0;
	if (!strcmp(backend, "glibc"))
		return round_up(size, page);
	if (!strcmp(backend, "tcmalloc"))
		return round_up(size, 8192);
	if (!strcmp(backend, "mimalloc"))
		return size <= 16384 ? 65536 : 524288;
	if (strcmp(backend, "jemalloc") != 0)
		return 0;
	/* The size class nearest the mean (a few other sizes move the mean
	 * of 1 KiB records to 1024.4 B, not to the next class) */
	double step = size <= 128 ? 16 : exp2(floor(log2(size - 1)) - 2);
	double cls = fmax(8, step * floor(size / step + 0.5));
	if (cls > 14336)
		return round_up(cls, page);
	double slab = page;
	while (fmod(slab, cls) != 0)
		slab += page;
	return slab;
}

/* Why this allocator keeps freed memory resident, in words. */
static const char *mechanism(const char *backend)
{
	if (!strcmp(backend, "glibc"))
		return "glibc keeps freed chunks in its heaps for reuse and "
		       "gives memory back to the kernel only from the top of a "
		       "heap (the trim) or when a whole mapped chunk is freed: "
		       "free chunks below a live one stay resident "
		       "(fragmentation)";
	if (!strcmp(backend, "jemalloc"))
		return "jemalloc keeps freed pages resident for a while before "
		       "it gives them back (dirty_decay_ms, 10 s by default, "
		       "then muzzy_decay_ms)";
	if (!strcmp(backend, "tcmalloc"))
		return "tcmalloc keeps freed spans in its page heap and gives "
		       "them back to the kernel slowly (TCMALLOC_RELEASE_RATE)";
	if (!strcmp(backend, "mimalloc"))
		return "mimalloc gives freed pages back to the kernel after a "
		       "delay, and only from inside its own calls: once the "
		       "program stops allocating, what it freed last (and what "
		       "threads that ended had) stays resident; and a page with "
		       "one live block is never given back";
	return "the allocator keeps freed memory for reuse instead of giving "
	       "it back to the kernel";
}

static void setting_fix(struct mt_finding *x, const char *setting,
			const char *text)
{
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_SETTING);
	if (!fix)
		return;
	snprintf(fix->setting, sizeof fix->setting, "%s", setting);
	snprintf(fix->text, sizeof fix->text, "%s", text);
}

/* Another backend, with the setting that makes it give memory back. */
static void backend_fix(struct mt_finding *x, const char *backend,
			const char *setting, const char *text)
{
	struct mt_fix *fix = mt_fix_add(x, MT_FIX_BACKEND);
	if (!fix)
		return;
	fix->backend = backend;
	snprintf(fix->setting, sizeof fix->setting, "%s", setting);
	snprintf(fix->text, sizeof fix->text, "%s (memtrace run --backend %s, "
		 "with %s)", text, backend, setting);
}

static const char jemalloc_now[] = "MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0";
static const char tcmalloc_now[] = "TCMALLOC_AGGRESSIVE_DECOMMIT=true";

/* The small blocks live while the memory was kept, and how much of it
 * they can keep resident: spread through it, each keeps its whole unit
 * (page, slab, span) however the allocator is set.  Memory no live block
 * can pin is free pages the allocator holds (its cache, its decay); when
 * the live small blocks can pin at least half, a setting that purges free
 * pages, or another allocator, cannot halve it (measured on 1M records
 * of 200 B of which every 64th stays: jemalloc with no decay 194 MB ->
 * 194 MB; tcmalloc decommitting at once 207 -> 134 MB), and the kept
 * memory is fragmentation. */
struct pinning {
	double small_size;  /* the mean small block (below 128 KiB) */
	double small_live_max; /* the most live in them at once, -1 unknown */
	double live_blocks; /* live small blocks at the sample */
	double kept;
};

static struct pinning pinning_of(const struct mt_call_figures *f)
{
	/* The small blocks' most live, from the samples, only where they were
	 * taken often (every 40 ms or closer, over the run: they follow the
	 * large frees, and a peak of small blocks between two far apart goes
	 * unseen) */
	bool dense = f->sampled_s > 0 && f->resident_samples >= f->sampled_s / 0.040;
	struct pinning p = {0, dense ? f->small_live_max : -1, 0, f->kept_sustained};
	double n = f->allocations - f->large_allocs;
	if (n >= 1 && f->bytes_allocated > f->large_bytes)
		p.small_size = (f->bytes_allocated - f->large_bytes) / n;
	/* The live bytes at that sample (the large block whose free took it
	 * not counted), less the large blocks live then: the small ones.
	 * (Recorded since trace 1.12; before, the large blocks still live at
	 * exit, at their mean size, stand for them: a table built early and
	 * freed at exit then counts as small blocks.) */
	double large_live = f->large_live_at_kept >= 0 ? f->large_live_at_kept
			    : f->large_allocs > f->large_frees
				    ? (f->large_allocs - f->large_frees) *
					      f->large_bytes / f->large_allocs
				    : 0;
	if (p.small_size > 0)
		p.live_blocks = fmax(f->live_at_kept - large_live, 0) / p.small_size;
	return p;
}

/* What the live small blocks can keep resident on `backend`: at most all
 * that was kept; the kept memory itself when it is not known. */
static double pinnable(const struct pinning *p, const char *backend, long page)
{
	double unit = pin_unit(backend, p->small_size, (double)page);
	double most = unit > 0 ? fmin(p->kept, p->live_blocks * unit) : p->kept;
	/* Small blocks pin only memory small blocks once held: no more than
	 * the most of them ever live (not on glibc, whose heap holds large
	 * blocks among them: a live one above a freed large block keeps it).
	 * A cache of 85 B strings beside freed 4-16 MiB vectors on tcmalloc:
	 * the vectors' spans were what it kept, and giving free spans back at
	 * once halved the memory. */
	if (p->small_live_max >= 0 && strcmp(backend, "glibc") != 0)
		most = fmin(most, p->small_live_max);
	return most;
}

static bool gives_back(const struct pinning *p, const char *backend, long page)
{
	return pinnable(p, backend, page) <= p->kept / 2;
}

/* The call that gives back what the allocator keeps free, now, from C and
 * from Python (its symbols are the process's: ctypes.CDLL(None) finds
 * them); NULL where there is none.  glibc's malloc_trim(0) is proposed
 * whatever pins the memory: it gives back free pages inside the heaps. */
static const char *give_back_call(const char *backend)
{
	if (!strcmp(backend, "tcmalloc"))
		return "MallocExtension_ReleaseFreeMemory() (gperftools' "
		       "malloc_extension_c.h; Python: ctypes.CDLL(None)."
		       "MallocExtension_ReleaseFreeMemory())";
	if (!strcmp(backend, "mimalloc"))
		return "mi_collect(true) (mimalloc.h; Python: ctypes.CDLL(None)."
		       "mi_collect(True))";
	if (!strcmp(backend, "jemalloc"))
		return "mallctl(\"arena.4096.purge\", NULL, NULL, NULL, 0) "
		       "(4096: every arena; Python: ctypes.CDLL(None).mallctl("
		       "b\"arena.4096.purge\", None, None, None, 0))";
	return NULL;
}

static void fixes(struct mt_finding *x, const struct mt_rule_input *in,
		  const struct pinning *p)
{
	const char *b = in->backend;
	long page = in->page_size > 0 ? in->page_size : 4096;
	bool here = gives_back(p, b, page);
	/* Where the run churns, giving memory back sooner makes more of
	 * the churn: not proposed (a pool of 1-8 MiB tasks on jemalloc,
	 * purging 69% of its CPU already, took 9.1 -> 52.3 s of system time
	 * with it; new-user trial 12). */
	bool sooner = !in->churns;
	/* Given back at once, every page of each block of a page or more
	 * allocated again faults anew: a fault a page of the bytes those
	 * blocks took (smaller blocks share their pages, which are given back
	 * only when all of theirs are free).  Not proposed where that would
	 * be more than the run's CPU (a pool of tasks' 1-4 MiB buffers on
	 * jemalloc, 50 MiB kept, went from 0.36 s to 33 s with it; new-user
	 * trial 22); said where it is a twentieth of it or more (batches of
	 * 64 KiB records: 5.6x the faults and +0.7 s with their memory given
	 * back between batches, which went unsaid where only blocks of 128
	 * KiB and more were counted; new-user trial 44). */
	const struct mt_call_figures *f = in->f;
	double cpu = f->user_s + f->system_s;
	double refaults = f->page_block_bytes / (double)page;
	double refaults_s = refaults * in->page_fault_most_s;
	char cost[160] = "";
	if (refaults_s > cpu)
		sooner = false;
	else if (refaults_s >= 0.05 * cpu)
		snprintf(cost, sizeof cost, "; its blocks' pages would fault "
			 "anew each time: up to %.0f more page faults and "
			 "%.2f s, against the run's %.2f s of CPU",
			 refaults, refaults_s, cpu);
	char now_text[512];
	snprintf(now_text, sizeof now_text,
		 "purge freed pages at once instead of after the decay time "
		 "(more madvise calls, less memory%s)", cost);
	if (!strcmp(b, "jemalloc") && here && sooner)
		setting_fix(x, jemalloc_now, now_text);
	snprintf(now_text, sizeof now_text,
		 "give freed spans back to the kernel as soon as they are "
		 "free%s", cost);
	if (!strcmp(b, "tcmalloc") && here && sooner)
		setting_fix(x, tcmalloc_now, now_text);
	if (!strcmp(b, "glibc") && in->f->threads > 1 && here)
		setting_fix(x, "GLIBC_TUNABLES=glibc.malloc.arena_max=2",
			    "two arenas instead of up to eight per core: the "
			    "threads share the free memory of fewer heaps");
	snprintf(now_text, sizeof now_text,
		 "run on jemalloc, purging freed pages at once%s", cost);
	if (strcmp(b, "jemalloc") != 0 && gives_back(p, "jemalloc", page) && sooner)
		backend_fix(x, "jemalloc", jemalloc_now, now_text);
	snprintf(now_text, sizeof now_text,
		 "run on tcmalloc, giving freed spans back at once%s", cost);
	if (strcmp(b, "tcmalloc") != 0 && gives_back(p, "tcmalloc", page) && sooner)
		backend_fix(x, "tcmalloc", tcmalloc_now, now_text);
	/* (fragmented or not: the live blocks' pages are an upper bound,
	 * and blocks allocated together share pages: a session table whose
	 * records of 3-5 blocks were 2% live, 493 MiB kept, of which
	 * malloc_trim(0) gave back 277) */
	/* A call that gives the memory back costs what allocating it again
	 * faults in: said, as a program that frees and allocates in batches
	 * would call it once a batch (5.6x the faults, +0.7 s; new-user
	 * trial 44). */
	char again[200];
	double again_faults = p->kept / (double)page;
	char b1[32];
	snprintf(again, sizeof again,
		 "; if the program then allocates as much again, each call "
		 "costs up to %.0f more page faults, the %s faulted in anew "
		 "(%.3f s here)",
		 again_faults, mt_format_bytes(p->kept, b1, sizeof b1),
		 again_faults * in->page_fault_most_s);
	struct mt_fix *code;
	if (!strcmp(b, "glibc") && (code = mt_fix_add(x, MT_FIX_CODE)))
		snprintf(code->text, sizeof code->text,
			 "after the part of the program that frees most of what "
			 "it allocated, call malloc_trim(0), which gives back the "
			 "free pages inside the heaps too, every page no live "
			 "block sits in (Python: "
			 "ctypes.CDLL(\"libc.so.6\").malloc_trim(0))%s", again);
	/* Where nothing live could pin it (4 threads' 256 MiB freed, their
	 * threads ended: 5 KiB live), the allocator's own call to give it
	 * back, in place of keeping blocks apart: MallocExtension_Release-
	 * FreeMemory took tcmalloc from 289 MB to 22, mi_collect(true)
	 * mimalloc from 288 MB to 2 (new-user trial 16's p11). */
	const char *call = give_back_call(b);
	bool pins = pinnable(p, b, page) >= p->kept / 10;
	if (call && here && (code = mt_fix_add(x, MT_FIX_CODE)))
		snprintf(code->text, sizeof code->text,
			 "after the part of the program that frees most of what "
			 "it allocated, call %s, which gives what the allocator "
			 "keeps free back to the kernel now%s",
			 call, again);
	if ((!here || pins) && (code = mt_fix_add(x, MT_FIX_CODE)))
		snprintf(code->text, sizeof code->text, "%s",
			 here ? "keep blocks that live long apart from the "
				"many that are freed (allocate them first, or "
				"from a pool of their own), so that freed memory "
				"is not pinned by a live neighbour"
			      : "keep the blocks that live long apart from the "
				"many that are freed: copy the survivors into new "
				"blocks allocated together (compact them into a "
				"new array) and free the old ones, or allocate "
				"each lifetime from an arena or pool of its own; "
				"no allocator setting gives back a page that "
				"holds a live block");
}

struct mt_finding *mt_rule_memory_kept(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	char b1[32], b2[32], b3[32], b4[32], b5[32];

	/* One figure for the whole process: said once, for the whole run. */
	if (!f->whole || f->resident_samples < 3 ||
	    f->kept_sustained < KEPT_MIN_BYTES ||
	    f->kept_sustained < f->anon_max / 3)
		return NULL;
	struct mt_finding *x = mt_finding_new("memory-kept", in);
	if (!x)
		return NULL;
	json_t *e = x->evidence;
	json_object_set_new(e, "kept_bytes_sustained", json_real(f->kept_sustained));
	json_object_set_new(e, "kept_bytes", json_real(f->kept_bytes));
	json_object_set_new(e, "anon_resident_bytes", json_real(f->anon_at_kept));
	json_object_set_new(e, "live_bytes_later", json_real(f->live_later));
	json_object_set_new(e, "kept_s", json_real(f->kept_s));
	json_object_set_new(e, "sampled_s", json_real(f->sampled_s));
	json_object_set_new(e, "program_mapped_bytes",
			    json_real(f->program_mapped_at_kept));
	json_object_set_new(e, "anon_resident_bytes_max", json_real(f->anon_max));
	json_object_set_new(e, "samples", json_real(f->resident_samples));
	json_object_set_new(e, "share_kept",
			    json_real(f->kept_sustained / f->anon_max));
	long page = in->page_size > 0 ? in->page_size : 4096;
	struct pinning p = pinning_of(f);
	double unit = pin_unit(in->backend, p.small_size, (double)page);
	double pinned = pinnable(&p, in->backend, page);
	bool fragmented = unit > 0 && pinned > p.kept / 2;
	json_object_set_new(e, "small_block_bytes", json_real(p.small_size));
	json_object_set_new(e, "live_small_blocks", json_real(p.live_blocks));
	json_object_set_new(e, "pin_unit_bytes", json_real(unit));
	json_object_set_new(e, "pinnable_bytes", json_real(pinned));

	snprintf(x->explanation, sizeof x->explanation,
		 "Memory, not time: for %.2f s of the %.2f s run (%.0f%%) the "
		 "allocator kept about %s of memory the program had freed "
		 "and did not use again%s. At the worst point the process had %s "
		 "of anonymous memory resident, while from then on the program "
		 "never had more than %s of blocks live (and %s mapped itself): "
		 "%s was kept then. %s. (From %.0f samples of /proc/self/statm beside "
		 "the heap's live bytes; the most anonymous memory resident in "
		 "any of them: %s.)",
		 f->kept_s, f->sampled_s,
		 f->sampled_s > 0 ? f->kept_s / f->sampled_s * 100 : 0,
		 mt_format_bytes(f->kept_sustained, b5, sizeof b5),
		 /* (two figures read as one: 63.6 MiB "kept", then "133.9
		  * MiB was kept"; new-user trial 49) */
		 f->kept_bytes > 1.1 * f->kept_sustained
			 ? " (all that time: more at the worst point)"
			 : "",
		 mt_format_bytes(f->anon_at_kept, b1, sizeof b1),
		 mt_format_bytes(f->live_later, b2, sizeof b2),
		 mt_format_bytes(f->program_mapped_at_kept, b3, sizeof b3),
		 mt_format_bytes(f->kept_bytes, b4, sizeof b4),
		 fragmented ? "" : mechanism(in->backend), f->resident_samples,
		 mt_format_bytes(f->anon_max, b1, sizeof b1));
	if (fragmented) {
		/* in place of the allocator's mechanism: what pins it */
		char *at = strstr(x->explanation, ". . (From");
		char tail[256];
		snprintf(tail, sizeof tail, "%s", at ? at + 4 : "");
		if (at)
			snprintf(at, sizeof x->explanation - (size_t)(at - x->explanation),
				 ". Fragmentation of small blocks: blocks "
				 "averaged %s, and about %.0f of them were "
				 "still live; on %s one live block keeps its whole %s "
				 "of %s resident, so, one to a %s, they can keep up "
				 "to %s of it, more than half, and then no setting "
				 "that gives free pages back sooner (decay) halves "
				 "it (blocks allocated together, as a record's "
				 "parts, share their pages and keep less). %s",
				 mt_format_bytes(p.small_size, b1, sizeof b1),
				 p.live_blocks, in->backend,
				 !strcmp(in->backend, "jemalloc") ? "slab"
				 : !strcmp(in->backend, "tcmalloc") ? "span"
								     : "page",
				 mt_format_bytes(unit, b2, sizeof b2),
				 !strcmp(in->backend, "jemalloc") ? "slab"
				 : !strcmp(in->backend, "tcmalloc") ? "span"
								     : "page",
				 mt_format_bytes(pinned, b3, sizeof b3), tail);
	}
	if (in->churns && !fragmented)
		mt_finding_append(x, "%s", mt_kept_for_a_churn);
	fixes(x, in, &p);
	return x;
}
