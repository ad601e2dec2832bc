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
#include <stdio.h>
#include <string.h>

#include "rules.h"

/* Less than this kept is not worth a finding on any machine, nor less
 * than a third of the process's anonymous memory at its most. */
#define KEPT_MIN_BYTES (32.0 * 1024 * 1024)

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
		return "mimalloc gives a page back only when every block in it "
		       "is free: one live block keeps its whole page (64 KiB "
		       "for small sizes) resident";
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

static void fixes(struct mt_finding *x, const struct mt_rule_input *in)
{
	const char *b = in->backend;
	if (!strcmp(b, "jemalloc"))
		setting_fix(x, jemalloc_now,
			    "purge freed pages at once instead of after the "
			    "decay time (more madvise calls, less memory)");
	if (!strcmp(b, "tcmalloc"))
		setting_fix(x, tcmalloc_now,
			    "give freed spans back to the kernel as soon as "
			    "they are free");
	if (!strcmp(b, "glibc") && in->f->threads > 1)
		setting_fix(x, "GLIBC_TUNABLES=glibc.malloc.arena_max=2",
			    "two arenas instead of up to eight per core: the "
			    "threads share the free memory of fewer heaps");
	if (strcmp(b, "jemalloc") != 0)
		backend_fix(x, "jemalloc", jemalloc_now,
			    "run on jemalloc, purging freed pages at once");
	if (strcmp(b, "tcmalloc") != 0)
		backend_fix(x, "tcmalloc", tcmalloc_now,
			    "run on tcmalloc, giving freed spans back at once");
	struct mt_fix *code = mt_fix_add(x, MT_FIX_CODE);
	if (code)
		snprintf(code->text, sizeof code->text, "%s",
			 !strcmp(b, "glibc")
				 ? "after the part of the program that frees "
				   "most of what it allocated, call malloc_trim(0), "
				   "which gives the free pages inside the heaps "
				   "back too (Python: ctypes.CDLL(\"libc.so.6\")"
				   ".malloc_trim(0))"
				 : "keep blocks that live long apart from the "
				   "many that are freed (allocate them first, or "
				   "from a pool of their own), so that freed memory "
				   "is not pinned by a live neighbour");
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

	snprintf(x->explanation, sizeof x->explanation,
		 "Memory, not time: for %.2f s of the %.2f s run (%.0f%%) the "
		 "allocator kept at least %s of memory the program had freed "
		 "and did not use again. At the worst point the process had %s "
		 "of anonymous memory resident, while from then on the program "
		 "never had more than %s of blocks live (and %s mapped itself): "
		 "%s was kept. %s. (From %.0f samples of /proc/self/statm beside "
		 "the heap's live bytes; the most anonymous memory resident in "
		 "any of them: %s.)",
		 f->kept_s, f->sampled_s,
		 f->sampled_s > 0 ? f->kept_s / f->sampled_s * 100 : 0,
		 mt_format_bytes(f->kept_sustained, b5, sizeof b5),
		 mt_format_bytes(f->anon_at_kept, b1, sizeof b1),
		 mt_format_bytes(f->live_later, b2, sizeof b2),
		 mt_format_bytes(f->program_mapped_at_kept, b3, sizeof b3),
		 mt_format_bytes(f->kept_bytes, b4, sizeof b4),
		 mechanism(in->backend), f->resident_samples,
		 mt_format_bytes(f->anon_max, b1, sizeof b1));
	fixes(x, in);
	return x;
}
