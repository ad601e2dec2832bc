#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_writer.h"
#include "summary.h"

#ifndef MT_VERSION
#define MT_VERSION "0"
#endif

static void write_calls(struct mt_json_obj *top, const struct mt_counters *c)
{
	struct mt_json_obj calls = mt_json_nested(top, "calls");
	for (int i = 0; i < MT_CALL_COUNT; i++)
		mt_json_u64(&calls, mt_call_names[i], c->calls[i]);
	mt_json_end(&calls);

	/* The memory-syscall entry points called by the allocator itself. */
	struct mt_json_obj by = mt_json_nested(top, "calls_by_allocator");
	for (int i = MT_CALL_MMAP; i < MT_CALL_COUNT; i++)
		mt_json_u64(&by, mt_call_names[i], c->calls_by_allocator[i]);
	mt_json_end(&by);

	/* Only the entries that take a size. */
	struct mt_json_obj req = mt_json_nested(top, "bytes_requested");
	for (int i = 0; i < MT_CALL_COUNT; i++)
		if (i != MT_CALL_FREE && i < MT_CALL_MALLOC_USABLE_SIZE)
			mt_json_u64(&req, mt_call_names[i], c->requested[i]);
	mt_json_end(&req);
}

static void write_histogram(struct mt_json_obj *top, const struct mt_counters *c)
{
	mt_json_key(top, "size_histogram");
	mt_json_put(top->o, "[");
	bool first = true;
	for (unsigned b = 0; b < MT_SIZE_BUCKETS; b++) {
		if (!c->size_hist[b])
			continue;
		uint64_t lo = b ? 1ull << (b - 1) : 0;
		uint64_t hi = b == 0 ? 0 : b == 64 ? UINT64_MAX : (1ull << b) - 1;
		mt_json_put(top->o, "%s{\"min\": %llu, \"max\": %llu, \"count\": %llu}",
		    first ? "" : ", ", (unsigned long long)lo,
		    (unsigned long long)hi, (unsigned long long)c->size_hist[b]);
		first = false;
	}
	mt_json_put(top->o, "]");
}


/* One figure per madvise advice used (`calls` says which were). */
static void by_advice(struct mt_json_obj *top, const char *key,
		      const uint64_t *calls, const uint64_t *figure)
{
	struct mt_json_obj adv = mt_json_nested(top, key);
	for (unsigned i = 0; i < MT_ADVICE_SLOTS; i++) {
		if (!calls[i])
			continue;
		char unnamed[32];
		const char *name = mt_advice_name(i);
		if (!name) {
			snprintf(unnamed, sizeof unnamed, "MADV_%u", i);
			name = unnamed;
		}
		mt_json_u64(&adv, name, figure[i]);
	}
	mt_json_end(&adv);
}
static void write_touched(struct mt_json_obj *top, const char *key,
			  uint64_t bytes, uint64_t huge, uint64_t by_allocator,
			  uint64_t huge_by_allocator)
{
	struct mt_json_obj o = mt_json_nested(top, key);
	mt_json_u64(&o, "bytes", bytes);
	mt_json_u64(&o, "huge_bytes", huge);
	mt_json_u64(&o, "bytes_by_allocator", by_allocator);
	mt_json_u64(&o, "huge_bytes_by_allocator", huge_by_allocator);
	mt_json_end(&o);
}

static void write_syscalls(struct mt_json_obj *top, const struct mt_figures *f)
{
	const struct mt_counters *c = &f->c;

	struct mt_json_obj sys = mt_json_nested(top, "syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		mt_json_u64(&sys, mt_sys_names[i], mt_figures_syscall(f, i).value);
	mt_json_end(&sys);

	struct mt_json_obj seen = mt_json_nested(top, "syscalls_interposed");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		mt_json_u64(&seen, mt_sys_names[i], c->sys[i]);
	mt_json_end(&seen);

	struct mt_json_obj inferred = mt_json_nested(top, "syscalls_inferred");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		mt_json_u64(&inferred, mt_sys_names[i], c->sys_inferred[i]);
	mt_json_end(&inferred);

	struct mt_json_obj alloc = mt_json_nested(top, "syscalls_by_allocator");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		mt_json_u64(&alloc, mt_sys_names[i], c->sys_by_allocator[i]);
	mt_json_end(&alloc);

	struct mt_json_obj bytes = mt_json_nested(top, "syscall_bytes");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		if (i != MT_SYS_BRK)
			mt_json_u64(&bytes, mt_sys_names[i], c->sys_bytes[i]);
	mt_json_end(&bytes);

	struct mt_json_obj alloc_bytes =
		mt_json_nested(top, "syscall_bytes_by_allocator");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		if (i != MT_SYS_BRK)
			mt_json_u64(&alloc_bytes, mt_sys_names[i],
				    c->sys_bytes_by_allocator[i]);
	mt_json_end(&alloc_bytes);

	struct mt_json_obj inferred_bytes = mt_json_nested(top, "syscall_bytes_inferred");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		if (i != MT_SYS_BRK)
			mt_json_u64(&inferred_bytes, mt_sys_names[i],
				  c->sys_inferred_bytes[i]);
	mt_json_end(&inferred_bytes);

	struct mt_json_obj brk = mt_json_nested(top, "brk");
	mt_json_u64(&brk, "grow", c->brk_grow);
	mt_json_u64(&brk, "grow_bytes", c->brk_grow_bytes);
	mt_json_u64(&brk, "shrink", c->brk_shrink);
	mt_json_u64(&brk, "shrink_bytes", c->brk_shrink_bytes);
	mt_json_end(&brk);

	/* What the unmapped and the purged memory held: touched, and in
	 * huge pages. */
	write_touched(top, "unmapped_touched", c->unmapped_touched,
		      c->unmapped_touched_huge, c->unmapped_touched_by_allocator,
		      c->unmapped_touched_huge_by_allocator);
	write_touched(top, "purged_touched", c->purged_touched,
		      c->purged_touched_huge, c->purged_touched_by_allocator,
		      c->purged_touched_huge_by_allocator);
	struct mt_json_obj again = mt_json_nested(top, "own_purges_again");
	mt_json_u64(&again, "count", c->own_purges_again);
	mt_json_u64(&again, "bytes", c->own_purged_again_bytes);
	mt_json_end(&again);

	/* glibc's mapped chunks that realloc resized in place. */
	struct mt_json_obj remaps = mt_json_nested(top, "remaps");
	mt_json_u64(&remaps, "grow", c->remap_grow);
	mt_json_u64(&remaps, "grow_bytes", c->remap_grow_bytes);
	mt_json_u64(&remaps, "shrink", c->remap_shrink);
	mt_json_u64(&remaps, "shrink_bytes", c->remap_shrink_bytes);
	mt_json_end(&remaps);

	/* The program's own malloc_trim calls, and the break's moves back
	 * they made. */
	struct mt_json_obj trims = mt_json_nested(top, "malloc_trim");
	mt_json_u64(&trims, "calls", c->trim_calls);
	mt_json_u64(&trims, "shrinks", c->trim_shrinks);
	mt_json_u64(&trims, "shrink_bytes", c->trim_shrink_bytes);
	mt_json_u64(&trims, "purges", c->trim_purges);
	mt_json_u64(&trims, "purged_bytes", c->trim_purged_bytes);
	mt_json_end(&trims);
	struct mt_json_obj zeroing = mt_json_nested(top, "calloc_purges");
	mt_json_u64(&zeroing, "count", c->calloc_purges);
	mt_json_u64(&zeroing, "bytes", c->calloc_purged_bytes);
	mt_json_end(&zeroing);

	by_advice(top, "madvise_by_advice", c->madvise_by_advice,
		  c->madvise_by_advice);
	/* The bytes each advice covered: a purge's, apart from the
	 * program's own hints (MADV_HUGEPAGE, MADV_WILLNEED, ...). */
	by_advice(top, "madvise_bytes_by_advice", c->madvise_by_advice,
		  c->madvise_bytes_by_advice);
}

/* Where each figure came from, and which ones are known to miss calls. */
static void write_sources(struct mt_json_obj *top, const struct mt_figures *f)
{
	struct mt_json_obj src = mt_json_nested(top, "sources");
	struct mt_json_obj sys = mt_json_nested(&src, "syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		mt_json_str(&sys, mt_sys_names[i], mt_figures_syscall(f, i).source);
	mt_json_end(&sys);
	mt_json_str(&src, "page_faults", mt_figures_faults(f, false).source);

	mt_json_key(&src, "incomplete");
	mt_json_put(top->o, "[");
	bool first = true;
	for (int i = 0; i < MT_SYS_COUNT; i++) {
		if (mt_figures_syscall(f, i).complete)
			continue;
		mt_json_put(top->o, "%s\"syscalls.%s\"", first ? "" : ", ", mt_sys_names[i]);
		first = false;
	}
	mt_json_put(top->o, "]");
	mt_json_end(&src);
}

/* Everything measured over a stretch of the run; `process` adds the
 * whole-process byte figures (live at exit, peak). */
static void write_figures(struct mt_json_obj *top, const struct mt_figures *f,
			  const struct mt_summary *process)
{
	const struct mt_counters *c = &f->c;

	write_calls(top, c);

	struct mt_json_obj bytes = mt_json_nested(top, "bytes");
	mt_json_u64(&bytes, "allocated", c->allocated);
	mt_json_u64(&bytes, "freed", c->freed);
	if (process) {
		int64_t live = (int64_t)(c->allocated - c->freed);
		mt_json_u64(&bytes, "live", live > 0 ? (uint64_t)live : 0);
		mt_json_u64(&bytes, "peak_live", process->peak_live);
		mt_json_key(&bytes, "peak_live_exact");
		mt_json_put(top->o, process->peak_sampled ? "false" : "true");
		if (process->peak_unknown) {
			mt_json_key(&bytes, "peak_live_known");
			mt_json_put(top->o, "false");
		}
	}
	mt_json_end(&bytes);

	struct mt_json_obj large = mt_json_nested(top, "large");
	mt_json_u64(&large, "min_size", MT_LARGE_BYTES);
	mt_json_u64(&large, "allocations", c->large_allocs);
	mt_json_u64(&large, "bytes", c->large_bytes);
	mt_json_u64(&large, "frees", c->large_frees);
	mt_json_u64(&large, "max_live", f->large_max_live);
	mt_json_end(&large);

	struct mt_json_obj moves = mt_json_nested(top, "realloc_moves");
	mt_json_u64(&moves, "count", c->realloc_moves);
	mt_json_u64(&moves, "copied_bytes", c->realloc_copied_bytes);
	mt_json_end(&moves);

	write_histogram(top, c);
	write_syscalls(top, f);

	struct mt_json_obj pf = mt_json_nested(top, "page_faults");
	mt_json_u64(&pf, "minor", mt_figures_faults(f, false).value);
	mt_json_u64(&pf, "major", mt_figures_faults(f, true).value);
	mt_json_end(&pf);

	write_sources(top, f);

	struct mt_json_obj cpu = mt_json_nested(top, "cpu_s");
	mt_json_double(&cpu, "user", f->user_s);
	mt_json_double(&cpu, "system", f->system_s);
	mt_json_end(&cpu);
}

/* The shim's own time, estimated (shim_cost.h); absent when not known (a
 * trace without its closing record, or from an older shim). */
static void write_shim_cost(struct mt_json_obj *top, const struct mt_shim_cost *k)
{
	if (!k->known)
		return;
	struct mt_json_obj o = mt_json_nested(top, "shim_cost");
	mt_json_double(&o, "estimated_s", k->estimated_s);
	mt_json_double(&o, "calls_s", k->calls_s);
	mt_json_double(&o, "threads_s", k->threads_s);
	mt_json_double(&o, "start_s", k->start_s);
	mt_json_double(&o, "thread_starts_s", k->thread_starts_s);
	mt_json_double(&o, "regions_s", k->regions_s);
	if (k->faults) /* (0: not known, a trace of before) */
		mt_json_u64(&o, "faults", k->faults);
	mt_json_double(&o, "share_of_run", k->share);
	mt_json_str(&o, "mode", k->tracing ? "trace" : "counting");
	mt_json_end(&o);
}

/* The whole process's figures that no region has. */
static void write_process(struct mt_json_obj *top, const struct mt_summary *s)
{
	struct mt_json_obj shim = mt_json_nested(top, "shim_syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		mt_json_u64(&shim, mt_sys_names[i], s->shim_syscalls[i]);
	mt_json_end(&shim);

	mt_json_double(top, "wall_s", s->wall_s);
	write_shim_cost(top, &s->shim_cost);
	mt_json_u64(top, "threads", s->threads);
	if (s->forks)
		mt_json_u64(top, "forks", s->forks);
	mt_json_u64(top, "peak_rss_bytes", s->peak_rss_bytes);
	if (s->glibc_heap) {
		struct mt_json_obj g = mt_json_nested(top, "glibc_thresholds");
		mt_json_u64(&g, "mmap", s->mmap_threshold);
		mt_json_u64(&g, "trim", s->trim_threshold);
		mt_json_u64(&g, "raises", s->threshold_raises);
		mt_json_key(&g, "dynamic");
		mt_json_put(top->o, s->thresholds_dynamic ? "true" : "false");
		if (s->thresholds_by_mallopt) {
			mt_json_key(&g, "by_mallopt");
			mt_json_put(top->o, "true");
		}
		mt_json_end(&g);
		struct mt_json_obj h = mt_json_nested(top, "thread_heaps_deleted");
		mt_json_u64(&h, "count", s->heaps_deleted);
		mt_json_u64(&h, "bytes", s->heaps_deleted_bytes);
		mt_json_end(&h);
	}
}

static void write_sites(struct mt_json_obj *top, const struct mt_summary *s)
{
	if (!s->sites_json)
		return;
	mt_json_key(top, "sites");
	mt_json_put(top->o, "%s", s->sites_json);
}

static void write_regions(struct mt_json_obj *top, const struct mt_summary *s)
{
	mt_json_key(top, "regions");
	mt_json_put(top->o, "[");
	for (size_t i = 0; i < s->region_count; i++) {
		const struct mt_region_summary *r = &s->regions[i];
		mt_json_put(top->o, i ? ", " : "");
		struct mt_json_obj o = mt_json_begin(top->o, NULL);
		mt_json_str(&o, "name", r->name);
		mt_json_u64(&o, "count", r->calls);
		struct mt_json_obj wall = mt_json_nested(&o, "wall_s");
		mt_json_double(&wall, "total", r->wall_total_s);
		mt_json_double(&wall, "min", r->wall_min_s);
		mt_json_double(&wall, "median", r->wall_median_s);
		mt_json_end(&wall);
		write_figures(&o, &r->f, NULL);
		mt_json_end(&o);
	}
	mt_json_put(top->o, "]");
}

static void write_resident(struct mt_json_obj *top, const struct mt_resident *r)
{
	if (!r->samples)
		return;
	struct mt_json_obj o = mt_json_nested(top, "resident");
	mt_json_u64(&o, "samples", r->samples);
	mt_json_u64(&o, "anon_bytes_max", r->anon_bytes_max);
	mt_json_u64(&o, "kept_bytes_max", r->kept_bytes_max);
	mt_json_u64(&o, "anon_bytes_at_kept_max", r->anon_bytes_at_kept_max);
	mt_json_u64(&o, "live_bytes_later", r->live_bytes_later);
	mt_json_u64(&o, "live_bytes_at_kept_max", r->live_bytes_at_kept_max);
	if (r->small_live_bytes_max != MT_RESIDENT_UNKNOWN)
		mt_json_u64(&o, "small_live_bytes_max", r->small_live_bytes_max);
	if (r->large_live_bytes_at_kept_max != MT_RESIDENT_UNKNOWN)
		mt_json_u64(&o, "large_live_bytes_at_kept_max",
			    r->large_live_bytes_at_kept_max);
	mt_json_u64(&o, "program_mapped_bytes_at_kept_max",
		    r->program_mapped_at_kept_max);
	mt_json_u64(&o, "kept_bytes_sustained", r->kept_bytes_sustained);
	mt_json_u64(&o, "kept_ms", r->kept_ms);
	mt_json_u64(&o, "sampled_ms", r->sampled_ms);
	mt_json_u64(&o, "anon_bytes_exit", r->anon_bytes_exit);
	mt_json_u64(&o, "live_bytes_exit", r->live_bytes_exit);
	mt_json_end(&o);
}

size_t mt_summary_json(const struct mt_summary *s, char *buf, size_t len)
{
	struct mt_json_out o = {buf, len, 0, false};
	struct mt_json_obj top = mt_json_begin(&o, NULL);

	mt_json_str(&top, "version", MT_VERSION);
	mt_json_u64(&top, "schema", MT_SUMMARY_SCHEMA);
	mt_json_u64(&top, "pid", (uint64_t)s->pid);
	mt_json_key(&top, "command");
	mt_json_put(&o, "[");
	for (size_t i = 0; s->argv && s->argv[i]; i++) {
		mt_json_put(&o, i ? ", " : "");
		mt_json_string(&o, s->argv[i]);
	}
	mt_json_put(&o, "]");

	struct mt_json_obj be = mt_json_nested(&top, "backend");
	mt_json_str(&be, "name", s->backend_name);
	mt_json_str(&be, "library", s->backend_library);
	mt_json_str(&be, "version", s->backend_version);
	mt_json_end(&be);

	write_figures(&top, &s->f, s);

	write_process(&top, s);
	write_sites(&top, s);
	if (s->fault_period) {
		struct mt_json_obj fs = mt_json_nested(&top, "fault_samples");
		mt_json_u64(&fs, "period", s->fault_period);
		mt_json_u64(&fs, "recorded", s->fault_samples);
		mt_json_u64(&fs, "lost", s->fault_samples_lost);
		if (s->fault_samples_on_sites >= 0)
			mt_json_u64(&fs, "on_sites",
				    (uint64_t)s->fault_samples_on_sites);
		mt_json_end(&fs);
	}
	write_resident(&top, &s->resident);
	write_regions(&top, s);
	mt_json_end(&top);
	mt_json_put(&o, "\n");
	return o.overflow ? 0 : o.pos;
}

size_t mt_summary_exit_json(const struct mt_summary *s, char *buf, size_t len)
{
	struct mt_json_out o = {buf, len, 0, false};
	struct mt_json_obj top = mt_json_begin(&o, NULL);
	const struct mt_figures *f = &s->f;

	struct mt_json_obj sys = mt_json_nested(&top, "syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		mt_json_u64(&sys, mt_sys_names[i], mt_figures_syscall(f, i).value);
	mt_json_end(&sys);
	struct mt_json_obj pf = mt_json_nested(&top, "page_faults");
	mt_json_u64(&pf, "minor", mt_figures_faults(f, false).value);
	mt_json_u64(&pf, "major", mt_figures_faults(f, true).value);
	mt_json_end(&pf);
	write_sources(&top, f);
	struct mt_json_obj cpu = mt_json_nested(&top, "cpu_s");
	mt_json_double(&cpu, "user", f->user_s);
	mt_json_double(&cpu, "system", f->system_s);
	mt_json_end(&cpu);
	struct mt_json_obj bytes = mt_json_nested(&top, "bytes");
	mt_json_u64(&bytes, "peak_live", s->peak_live);
	mt_json_key(&bytes, "peak_live_exact");
	mt_json_put(&o, s->peak_sampled ? "false" : "true");
	mt_json_end(&bytes);
	write_process(&top, s);
	write_sites(&top, s);
	mt_json_u64(&top, "fault_period", s->fault_period);
	mt_json_end(&top);
	return o.overflow ? 0 : o.pos;
}
