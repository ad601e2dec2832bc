#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "summary.h"

#ifndef MT_VERSION
#define MT_VERSION "0"
#endif

/* A bounded writer into a caller's buffer; once it overflows, it stops. */
struct out {
	char *buf;
	size_t len, pos;
	bool overflow;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	if (o->overflow)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->pos)
		o->overflow = true;
	else
		o->pos += (size_t)n;
}

static void put_string(struct out *o, const char *s)
{
	put(o, "\"");
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			put(o, "\\%c", ch);
		else if (ch < 0x20)
			put(o, "\\u%04x", ch);
		else
			put(o, "%c", ch);
	}
	put(o, "\"");
}

/* "name": value pairs inside one object, with the commas between them. */
struct obj {
	struct out *o;
	bool first;
};

static struct obj begin(struct out *o, const char *key)
{
	if (key) {
		put_string(o, key);
		put(o, ": ");
	}
	put(o, "{");
	return (struct obj){o, true};
}

static void key(struct obj *j, const char *k)
{
	put(j->o, j->first ? "" : ", ");
	j->first = false;
	put_string(j->o, k);
	put(j->o, ": ");
}

static void field_u64(struct obj *j, const char *k, uint64_t v)
{
	key(j, k);
	put(j->o, "%llu", (unsigned long long)v);
}

static void field_double(struct obj *j, const char *k, double v)
{
	key(j, k);
	put(j->o, "%.6f", v);
}

static void field_string(struct obj *j, const char *k, const char *v)
{
	key(j, k);
	if (v && *v)
		put_string(j->o, v);
	else
		put(j->o, "null");
}

static void end(struct obj *j)
{
	put(j->o, "}");
}

static struct obj nested(struct obj *j, const char *k)
{
	key(j, k);
	return begin(j->o, NULL);
}

static void write_calls(struct obj *top, const struct mt_counters *c)
{
	struct obj calls = nested(top, "calls");
	for (int i = 0; i < MT_CALL_COUNT; i++)
		field_u64(&calls, mt_call_names[i], c->calls[i]);
	end(&calls);

	/* The memory-syscall entry points called by the allocator itself. */
	struct obj by = nested(top, "calls_by_allocator");
	for (int i = MT_CALL_MMAP; i < MT_CALL_COUNT; i++)
		field_u64(&by, mt_call_names[i], c->calls_by_allocator[i]);
	end(&by);

	/* Only the entries that take a size. */
	struct obj req = nested(top, "bytes_requested");
	for (int i = 0; i < MT_CALL_COUNT; i++)
		if (i != MT_CALL_FREE && i < MT_CALL_MALLOC_USABLE_SIZE)
			field_u64(&req, mt_call_names[i], c->requested[i]);
	end(&req);
}

static void write_histogram(struct obj *top, const struct mt_counters *c)
{
	key(top, "size_histogram");
	put(top->o, "[");
	bool first = true;
	for (unsigned b = 0; b < MT_SIZE_BUCKETS; b++) {
		if (!c->size_hist[b])
			continue;
		uint64_t lo = b ? 1ull << (b - 1) : 0;
		uint64_t hi = b == 0 ? 0 : b == 64 ? UINT64_MAX : (1ull << b) - 1;
		put(top->o, "%s{\"min\": %llu, \"max\": %llu, \"count\": %llu}",
		    first ? "" : ", ", (unsigned long long)lo,
		    (unsigned long long)hi, (unsigned long long)c->size_hist[b]);
		first = false;
	}
	put(top->o, "]");
}

static void write_syscalls(struct obj *top, const struct mt_figures *f)
{
	const struct mt_counters *c = &f->c;

	struct obj sys = nested(top, "syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		field_u64(&sys, mt_sys_names[i], mt_figures_syscall(f, i).value);
	end(&sys);

	struct obj seen = nested(top, "syscalls_interposed");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		field_u64(&seen, mt_sys_names[i], c->sys[i]);
	end(&seen);

	struct obj inferred = nested(top, "syscalls_inferred");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		field_u64(&inferred, mt_sys_names[i], c->sys_inferred[i]);
	end(&inferred);

	struct obj alloc = nested(top, "syscalls_by_allocator");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		field_u64(&alloc, mt_sys_names[i], c->sys_by_allocator[i]);
	end(&alloc);

	struct obj bytes = nested(top, "syscall_bytes");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		if (i != MT_SYS_BRK)
			field_u64(&bytes, mt_sys_names[i], c->sys_bytes[i]);
	end(&bytes);

	struct obj inferred_bytes = nested(top, "syscall_bytes_inferred");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		if (i != MT_SYS_BRK)
			field_u64(&inferred_bytes, mt_sys_names[i],
				  c->sys_inferred_bytes[i]);
	end(&inferred_bytes);

	struct obj brk = nested(top, "brk");
	field_u64(&brk, "grow", c->brk_grow);
	field_u64(&brk, "grow_bytes", c->brk_grow_bytes);
	field_u64(&brk, "shrink", c->brk_shrink);
	field_u64(&brk, "shrink_bytes", c->brk_shrink_bytes);
	end(&brk);

	struct obj adv = nested(top, "madvise_by_advice");
	for (unsigned i = 0; i < MT_ADVICE_SLOTS; i++) {
		if (!c->madvise_by_advice[i])
			continue;
		char unnamed[32];
		const char *name = mt_advice_name(i);
		if (!name) {
			snprintf(unnamed, sizeof unnamed, "MADV_%u", i);
			name = unnamed;
		}
		field_u64(&adv, name, c->madvise_by_advice[i]);
	}
	end(&adv);
}

/* Where each figure came from, and which ones are known to miss calls. */
static void write_sources(struct obj *top, const struct mt_figures *f)
{
	struct obj src = nested(top, "sources");
	struct obj sys = nested(&src, "syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		field_string(&sys, mt_sys_names[i], mt_figures_syscall(f, i).source);
	end(&sys);
	field_string(&src, "page_faults", mt_figures_faults(f, false).source);

	key(&src, "incomplete");
	put(top->o, "[");
	bool first = true;
	for (int i = 0; i < MT_SYS_COUNT; i++) {
		if (mt_figures_syscall(f, i).complete)
			continue;
		put(top->o, "%s\"syscalls.%s\"", first ? "" : ", ", mt_sys_names[i]);
		first = false;
	}
	put(top->o, "]");
	end(&src);
}

/* Everything measured over a stretch of the run; `process` adds the
 * whole-process byte figures (live at exit, peak). */
static void write_figures(struct obj *top, const struct mt_figures *f,
			  const struct mt_summary *process)
{
	const struct mt_counters *c = &f->c;

	write_calls(top, c);

	struct obj bytes = nested(top, "bytes");
	field_u64(&bytes, "allocated", c->allocated);
	field_u64(&bytes, "freed", c->freed);
	if (process) {
		int64_t live = (int64_t)(c->allocated - c->freed);
		field_u64(&bytes, "live", live > 0 ? (uint64_t)live : 0);
		field_u64(&bytes, "peak_live", process->peak_live);
		key(&bytes, "peak_live_exact");
		put(top->o, process->peak_sampled ? "false" : "true");
	}
	end(&bytes);

	struct obj large = nested(top, "large");
	field_u64(&large, "min_size", MT_LARGE_BYTES);
	field_u64(&large, "allocations", c->large_allocs);
	field_u64(&large, "bytes", c->large_bytes);
	field_u64(&large, "frees", c->large_frees);
	field_u64(&large, "max_live", f->large_max_live);
	end(&large);

	write_histogram(top, c);
	write_syscalls(top, f);

	struct obj pf = nested(top, "page_faults");
	field_u64(&pf, "minor", mt_figures_faults(f, false).value);
	field_u64(&pf, "major", mt_figures_faults(f, true).value);
	end(&pf);

	write_sources(top, f);

	struct obj cpu = nested(top, "cpu_s");
	field_double(&cpu, "user", f->user_s);
	field_double(&cpu, "system", f->system_s);
	end(&cpu);
}

static void write_regions(struct obj *top, const struct mt_summary *s)
{
	key(top, "regions");
	put(top->o, "[");
	for (size_t i = 0; i < s->region_count; i++) {
		const struct mt_region_summary *r = &s->regions[i];
		put(top->o, i ? ", " : "");
		struct obj o = begin(top->o, NULL);
		field_string(&o, "name", r->name);
		field_u64(&o, "count", r->calls);
		struct obj wall = nested(&o, "wall_s");
		field_double(&wall, "total", r->wall_total_s);
		field_double(&wall, "min", r->wall_min_s);
		field_double(&wall, "median", r->wall_median_s);
		end(&wall);
		write_figures(&o, &r->f, NULL);
		end(&o);
	}
	put(top->o, "]");
}

size_t mt_summary_json(const struct mt_summary *s, char *buf, size_t len)
{
	struct out o = {buf, len, 0, false};
	struct obj top = begin(&o, NULL);

	field_string(&top, "version", MT_VERSION);
	field_u64(&top, "schema", MT_SUMMARY_SCHEMA);
	field_u64(&top, "pid", (uint64_t)s->pid);
	key(&top, "command");
	put(&o, "[");
	for (size_t i = 0; s->argv && s->argv[i]; i++) {
		put(&o, i ? ", " : "");
		put_string(&o, s->argv[i]);
	}
	put(&o, "]");

	struct obj be = nested(&top, "backend");
	field_string(&be, "name", s->backend_name);
	field_string(&be, "library", s->backend_library);
	field_string(&be, "version", s->backend_version);
	end(&be);

	write_figures(&top, &s->f, s);

	struct obj shim = nested(&top, "shim_syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		field_u64(&shim, mt_sys_names[i], s->shim_syscalls[i]);
	end(&shim);

	field_double(&top, "wall_s", s->wall_s);
	field_u64(&top, "threads", s->threads);
	field_u64(&top, "peak_rss_bytes", s->peak_rss_bytes);
	if (s->glibc_heap) {
		struct obj g = nested(&top, "glibc_thresholds");
		field_u64(&g, "mmap", s->mmap_threshold);
		field_u64(&g, "trim", s->trim_threshold);
		field_u64(&g, "raises", s->threshold_raises);
		key(&g, "dynamic");
		put(&o, s->thresholds_dynamic ? "true" : "false");
		end(&g);
	}
	write_regions(&top, s);
	end(&top);
	put(&o, "\n");
	return o.overflow ? 0 : o.pos;
}
