/* Two passes over a recording: the first finds how long it lasts, the
 * second puts each event into one of MT_REPORT_POINTS intervals of that
 * span.  Memory stays bounded by the intervals (and the regions' names),
 * whatever the recording's size. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "replay.h"
#include "report_series.h"

enum { SYSCALLS = 5, MAX_BANDS = MT_REPORT_POINTS };
static const char *const syscall_names[SYSCALLS] = {"brk", "mmap", "munmap",
						    "mremap", "madvise"};

/* The enum mt_sys of each of those. */
static int slot_of_sys(uint64_t sys)
{
	switch (sys) {
	case MT_SYS_BRK: return 0;
	case MT_SYS_MMAP: return 1;
	case MT_SYS_MUNMAP: return 2;
	case MT_SYS_MREMAP: return 3;
	case MT_SYS_MADVISE: return 4;
	default: return -1;
	}
}

struct bucket {
	bool rss, heap;
	uint64_t anon, file, live;	/* the most in the interval */
	uint64_t heap_min, heap_max;
	uint32_t kernel[SYSCALLS], shim[SYSCALLS], faults;
	int64_t live_change; /* the bytes allocated less those freed */
};

struct open_region {
	uint32_t tid;
	uint64_t id, start_ns;
};

struct gather {
	uint64_t span_ns, width_ns, events;
	uint64_t start_ns; /* the recording's first event, CLOCK_MONOTONIC */
	struct bucket *b;
	uintptr_t heap_base;
	bool have_base, kernel_seen;
	struct mt_idmap names;		   /* region id + 1 -> name */
	struct open_region open[64];	   /* calls in progress */
	size_t nopen;
	const struct mt_idmap *shim; /* the shim's own threads */
	int64_t live_at_start; /* by the baseline */
	bool live_seen;	       /* any allocation or free */
	json_t *bands;
	bool failed;
};

/* The first pass: how long the recording lasts, and which threads are
 * the shim's own (the kernel calls sampled on them are not the
 * program's; their thread_start may come after those calls in the file). */
struct span {
	uint64_t last;
	struct mt_idmap shim;
	bool failed;
};

static bool find_span(const struct mt_event *e, void *arg)
{
	struct span *s = arg;
	if (e->ns > s->last)
		s->last = e->ns;
	if (e->tag == MT_EV_THREAD_START && (e->thread_start.tid & MT_SHIM_THREAD) &&
	    !mt_idmap_put(&s->shim, (uint32_t)e->thread_start.tid, (void *)1))
		s->failed = true;
	return !s->failed;
}

static struct bucket *at(struct gather *g, uint64_t ns)
{
	uint64_t i = ns / g->width_ns;
	return &g->b[i < MT_REPORT_POINTS ? i : MT_REPORT_POINTS - 1];
}

static void heap_at(struct gather *g, uint64_t ns, uintptr_t brk)
{
	if (!g->have_base) {
		g->heap_base = brk;
		g->have_base = true;
	}
	uint64_t size = brk > g->heap_base ? brk - g->heap_base : 0;
	struct bucket *b = at(g, ns);
	if (!b->heap || size < b->heap_min)
		b->heap_min = size;
	if (!b->heap || size > b->heap_max)
		b->heap_max = size;
	b->heap = true;
}

static void region_begin(struct gather *g, const struct mt_event *e)
{
	if (g->nopen < sizeof g->open / sizeof *g->open)
		g->open[g->nopen++] = (struct open_region){e->tid, e->region_begin.id,
							   e->ns};
}

static void region_end(struct gather *g, const struct mt_event *e)
{
	for (size_t i = g->nopen; i-- > 0;) {
		struct open_region *r = &g->open[i];
		if (r->tid != e->tid || r->id != e->region_end.id)
			continue;
		const char *name = mt_idmap_get(&g->names, r->id + 1);
		if (json_array_size(g->bands) < MAX_BANDS)
			json_array_append_new(
				g->bands, json_pack("[f, f, s]", (double)r->start_ns / 1e9,
						    (double)e->ns / 1e9, name ? name : "?"));
		g->open[i] = g->open[--g->nopen];
		return;
	}
}

/* The kernel's samples (a memory syscall, a page fault) carry the time
 * they happened, CLOCK_MONOTONIC; their records' own are when the shim
 * collected them, every 0.1 s: the calls of a run spread evenly stood in
 * spikes at 0.1, 0.2, 0.3 s (new-user trial 28). */
static struct bucket *when_sampled(struct gather *g, uint64_t time_ns,
				   const struct mt_event *e)
{
	return at(g, time_ns >= g->start_ns && g->start_ns ? time_ns - g->start_ns
							  : e->ns);
}

static bool gather_event(const struct mt_event *e, void *arg)
{
	struct gather *g = arg;
	struct bucket *b = at(g, e->ns);
	int slot;
	g->events++;
	switch (e->tag) {
	case MT_EV_RSS:
		if (e->rss.at_exit)
			break;
		b->rss = true;
		if (e->rss.anon_bytes > b->anon)
			b->anon = e->rss.anon_bytes;
		if (e->rss.file_bytes > b->file)
			b->file = e->rss.file_bytes;
		if (e->rss.live_bytes > b->live)
			b->live = e->rss.live_bytes;
		break;
	case MT_EV_ALLOC:
		b->live_change += (int64_t)e->alloc.usable;
		g->live_seen = true;
		break;
	case MT_EV_FREE:
		b->live_change -= (int64_t)e->free.usable;
		g->live_seen = true;
		break;
	case MT_EV_REALLOC:
		if (e->realloc.old_freed)
			b->live_change -= (int64_t)e->realloc.old_usable;
		b->live_change += (int64_t)e->realloc.usable;
		g->live_seen = true;
		break;
	case MT_EV_BASELINE: {
		struct mt_counters c;
		uint64_t peak;
		if (mt_baseline_counters(e, &c, &peak))
			g->live_at_start = (int64_t)(c.allocated - c.freed);
		break;
	}
	case MT_EV_HEAP_MOVE:
		if (e->heap_move.from != e->heap_move.to) {
			heap_at(g, e->ns, e->heap_move.from);
			heap_at(g, e->ns, e->heap_move.to);
		}
		break;
	case MT_EV_KCALL:
		/* at entry: the kernel's view of every memory syscall */
		if (!((e->kernel_call.which >> 4) & 1) &&
		    !mt_idmap_get(g->shim, e->kernel_call.tid) &&
		    (slot = slot_of_sys(e->kernel_call.which & 15)) >= 0) {
			when_sampled(g, e->kernel_call.time_ns, e)->kernel[slot]++;
			g->kernel_seen = true;
		}
		break;
	case MT_EV_SYS_COUNT:
		if ((slot = slot_of_sys(e->sys.sys)) >= 0)
			b->shim[slot]++;
		break;
	case MT_EV_FAULT:
		when_sampled(g, e->page_fault.time_ns, e)->faults++;
		break;
	case MT_EV_REGION_NAME: {
		char *name = strndup(e->text, e->text_len);
		void *old = mt_idmap_get(&g->names, e->region_name.id + 1);
		if (!name || !mt_idmap_put(&g->names, e->region_name.id + 1, name)) {
			free(name);
			g->failed = true;
		} else {
			free(old);
		}
		break;
	}
	case MT_EV_REGION_BEGIN:
		region_begin(g, e);
		break;
	case MT_EV_REGION_END:
		region_end(g, e);
		break;
	}
	return !g->failed;
}

static double seconds(const struct gather *g, size_t i)
{
	return ((double)i + 0.5) * (double)g->width_ns / 1e9;
}

static json_t *points(const struct gather *g, size_t field_offset, bool want_rss)
{
	json_t *out = json_array();
	for (size_t i = 0; i < MT_REPORT_POINTS; i++) {
		const struct bucket *b = &g->b[i];
		if (want_rss ? !b->rss : !b->heap)
			continue;
		uint64_t v = *(const uint64_t *)((const char *)b + field_offset);
		json_array_append_new(out, json_pack("[f, I]", seconds(g, i), (json_int_t)v));
	}
	return out;
}

/* The live bytes at each interval's end, from every allocation and free
 * (the samples' live bytes are the few a short run has time for: a run
 * of 13 ms drew none; new-user trial 32).  Each thread's events are in
 * time order but not the threads' together: summed by interval, not in
 * the order read. */
static json_t *live_points(const struct gather *g)
{
	json_t *out = json_array();
	int64_t live = g->live_at_start;
	for (size_t i = 0; g->live_seen && i < MT_REPORT_POINTS; i++) {
		if (!g->b[i].live_change && i)
			continue;
		live += g->b[i].live_change;
		json_array_append_new(out, json_pack("[f, I]", seconds(g, i),
						     (json_int_t)(live > 0 ? live : 0)));
	}
	return out;
}

static json_t *counts(const struct gather *g, int slot, bool faults)
{
	json_t *out = json_array();
	for (size_t i = 0; i < MT_REPORT_POINTS; i++) {
		const struct bucket *b = &g->b[i];
		uint32_t n = faults ? b->faults
			     : g->kernel_seen ? b->kernel[slot] : b->shim[slot];
		if (n)
			json_array_append_new(out, json_pack("[f, i]", seconds(g, i), n));
	}
	return out;
}

json_t *mt_report_series(struct mt_trace *t, char *err, size_t errlen)
{
	struct span span = {0};
	if (!mt_trace_each(t, false, find_span, &span, err, errlen) || span.failed) {
		if (span.failed)
			mt_read_fail(err, errlen, "out of memory");
		mt_idmap_free(&span.shim);
		return NULL;
	}
	uint64_t last = span.last;
	struct gather g = {.span_ns = last ? last : 1,
			   .start_ns = mt_trace_start_ns(t), .shim = &span.shim};
	g.width_ns = g.span_ns / MT_REPORT_POINTS + 1;
	g.b = calloc(MT_REPORT_POINTS, sizeof *g.b);
	g.bands = json_array();
	if (!g.b || !g.bands) {
		mt_read_fail(err, errlen, "out of memory");
		free(g.b);
		json_decref(g.bands);
		mt_idmap_free(&span.shim);
		return NULL;
	}
	bool ok = mt_trace_each(t, false, gather_event, &g, err, errlen) && !g.failed;
	json_t *s = NULL;
	if (ok) {
		json_t *sys = json_object();
		for (int k = 0; k < SYSCALLS; k++)
			json_object_set_new(sys, syscall_names[k], counts(&g, k, false));
		s = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:I, s:f, s:s}",
			      "anon_bytes", points(&g, offsetof(struct bucket, anon), true),
			      "file_bytes", points(&g, offsetof(struct bucket, file), true),
			      "live_bytes", points(&g, offsetof(struct bucket, live), true),
			      "live_event_bytes", live_points(&g),
			      "heap_min_bytes", points(&g, offsetof(struct bucket, heap_min), false),
			      "heap_bytes", points(&g, offsetof(struct bucket, heap_max), false),
			      "syscalls", sys, "faults", counts(&g, 0, true),
			      "regions", g.bands, "seconds", (double)g.span_ns / 1e9,
			      "events", (json_int_t)g.events,
			      "interval_s", (double)g.width_ns / 1e9,
			      "syscall_source", g.kernel_seen ? "kernel" : "interposed");
		g.bands = NULL;
	} else if (g.failed) {
		mt_read_fail(err, errlen, "out of memory");
	}
	json_decref(g.bands);
	for (size_t i = 0; i < g.names.cap; i++)
		free(mt_idmap_at(&g.names, i));
	mt_idmap_free(&g.names);
	mt_idmap_free(&span.shim);
	free(g.b);
	return s;
}
