#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "counters.h"
#include "fault_sites.h"
#include "idmap.h"
#include "recording.h"
#include "replay.h"
#include "site_tree.h"

/* The live summary's median is over a region's first calls only
 * (shim/regions.c): the same here, or the two would differ. */
enum { MAX_DURATIONS = 1 << 20, NCOUNTERS = MT_KERNEL_COUNT + MT_SYS_COUNT + 4 };

/* A COUNTERS event: kernel counters (+1, 0 = none), the shim's own
 * syscalls, then CPU (us) and faults of the thread. */
struct snapshot {
	uint64_t v[NCOUNTERS];
};

struct mark {
	uint64_t region;
	struct mt_counters c;
	struct snapshot at;
	int64_t outer_large_peak, large_live;
	uint64_t wall_ns; /* set by the end, completed by its counters */
};

/* A thread is small unless it is inside a region: its counters only
 * exist then (the process's totals take its events otherwise), so a trace
 * of many threads costs little each. */
struct thread {
	uint32_t tid;
	struct mt_counters *c; /* while in a region, else NULL */
	int64_t large_live, large_peak;
	struct snapshot last;
	struct mark *marks;
	unsigned open, cap;
	bool ending; /* a region end waits for its counters */
	bool remapped; /* its realloc in progress mremapped a mapped chunk */
	/* the allocator's purges since the thread's last call event, and
	 * the range they covered: those of the call whose event comes next
	 * (the shim writes it after the real call), counted as calloc's
	 * zeroing where it is a large calloc whose block they covered, as
	 * the shim counts them (probe.h) */
	uint64_t purges_pending, purged_pending;
	uint64_t purge_lo, purge_hi;
};

struct region {
	uint64_t id;
	char *name;
	uint64_t calls, wall_total, wall_min;
	uint64_t *durations;
	size_t ndurations, cap;
	struct mt_figures f;
	bool seen;
};

struct replay {
	struct mt_idmap threads; /* tid -> thread, the live ones */
	struct thread *recent;	 /* most events are the previous one's */
	struct mt_counters total; /* every event outside regions, and the
				     threads that left */
	int64_t large_max;	 /* of the threads that left */
	struct mt_idmap regions; /* id -> region */
	int64_t live, peak;
	uint64_t fault_samples, fault_samples_lost;
	/* The rss events, folded at the end in the order the shim folded
	 * them: by time (it takes, folds and records a sample under one
	 * lock), which the threads' streams do not give back. */
	struct rss_sample *rss;
	size_t rss_len, rss_cap;
	json_t *exit;
	/* The latest progress event: without the closing record, the
	 * figures it carries as they were then. */
	struct mt_ev_progress progress;
	uint64_t progress_ns; /* its time */
	bool progressed;
	struct mt_recording rec;
	bool failed; /* out of memory */
	/* What the summary points into. */
	const char **argv;
	struct mt_region_summary *summaries;
	char *sites;
	json_t *sites_so_far; /* the latest sites event's sites */
	uint64_t sites_ns;    /* its time */
	json_t *site_tree;    /* the nodes of their stacks (site_tree.h) */
	struct mt_fault_sites *fault_sites;
};

struct rss_sample {
	uint64_t ns, seq;
	struct mt_ev_rss s;
};

static void keep_rss(struct replay *r, const struct mt_event *e)
{
	if (r->rss_len == r->rss_cap) {
		size_t cap = r->rss_cap ? 2 * r->rss_cap : 64;
		struct rss_sample *more = realloc(r->rss, cap * sizeof *more);
		if (!more) {
			r->failed = true;
			return;
		}
		r->rss = more;
		r->rss_cap = cap;
	}
	r->rss[r->rss_len] = (struct rss_sample){e->ns, r->rss_len, e->rss};
	if (e->nv < 8) /* (before 1.12: not recorded) */
		r->rss[r->rss_len].s.large_live_bytes = MT_RESIDENT_UNKNOWN;
	r->rss_len++;
}

static int by_time(const void *a, const void *b)
{
	const struct rss_sample *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void fold_rss(struct replay *r, struct mt_resident *out)
{
	struct mt_resident_series *series = calloc(1, sizeof *series);
	if (!series) {
		r->failed = true;
		return;
	}
	if (r->rss_len)
		qsort(r->rss, r->rss_len, sizeof *r->rss, by_time);
	for (size_t i = 0; i < r->rss_len; i++)
		mt_resident_fold(series, &r->rss[i].s, false);
	mt_resident_figures(series, out);
	free(series);
}

static struct thread *thread_of(struct replay *r, uint32_t tid)
{
	if (r->recent && r->recent->tid == tid)
		return r->recent;
	struct thread *t = mt_idmap_get(&r->threads, tid);
	if (!t) {
		t = calloc(1, sizeof *t);
		if (!t || !mt_idmap_put(&r->threads, tid, t)) {
			free(t);
			r->failed = true;
			return NULL;
		}
		t->tid = tid;
	}
	return r->recent = t;
}

/* Where a thread's events count: its own counters inside a region (the
 * region takes their change), else the process's. */
static struct mt_counters *counters(struct replay *r, struct thread *t)
{
	return t->c ? t->c : &r->total;
}

static void large_alloc(struct thread *t)
{
	if (++t->large_live > t->large_peak)
		t->large_peak = t->large_live;
}

static void alloc(struct replay *r, struct thread *t, int entry, uint64_t size,
		  uint64_t usable)
{
	struct mt_counters *c = counters(r, t);
	mt_count_alloc(c, (enum mt_call)entry, size, usable);
	if (usable >= MT_LARGE_BYTES) {
		c->large_allocs++;
		c->large_bytes += usable;
		large_alloc(t);
	}
	r->live += (int64_t)usable;
	if (r->live > r->peak)
		r->peak = r->live;
}

static void release(struct replay *r, struct thread *t, uint64_t usable)
{
	struct mt_counters *c = counters(r, t);
	mt_count_free(c, usable);
	if (usable >= MT_LARGE_BYTES) {
		c->large_frees++;
		c->large_freed_bytes += usable;
		t->large_live--;
	}
	r->live -= (int64_t)usable;
}

static struct region *region_of(struct replay *r, uint64_t id)
{
	struct region *g = mt_idmap_get(&r->regions, id);
	if (!g) {
		g = calloc(1, sizeof *g);
		if (!g || !mt_idmap_put(&r->regions, id, g)) {
			free(g);
			r->failed = true;
			return NULL;
		}
		g->id = id;
	}
	return g;
}

static void keep_duration(struct replay *r, struct region *g, uint64_t ns)
{
	if (g->ndurations == MAX_DURATIONS)
		return;
	if (g->ndurations == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 64;
		uint64_t *more = realloc(g->durations, cap * sizeof *more);
		if (!more) {
			r->failed = true;
			return;
		}
		g->durations = more;
		g->cap = cap;
	}
	g->durations[g->ndurations++] = ns;
}

/* Out of every region: the thread's counters go to the process's. */
static void leave_regions(struct replay *r, struct thread *t)
{
	if (t->c) {
		mt_counters_add(&r->total, t->c);
		free(t->c);
		t->c = NULL;
	}
}

/* A region call ends: its figures are what changed since the begin. */
static void close_region(struct replay *r, struct thread *t)
{
	struct mark *m = &t->marks[t->open];
	const struct snapshot *a = &m->at, *b = &t->last;
	struct region *g = region_of(r, m->region);
	t->ending = false;
	if (!g)
		return;
	if (!g->seen) {
		g->seen = true;
		g->wall_min = UINT64_MAX;
		for (int k = 0; k < MT_KERNEL_COUNT; k++)
			g->f.kernel_valid[k] = true;
	}
	g->calls++;
	g->wall_total += m->wall_ns;
	if (m->wall_ns < g->wall_min)
		g->wall_min = m->wall_ns;
	keep_duration(r, g, m->wall_ns);

	uint64_t *sum = (uint64_t *)&g->f.c;
	const uint64_t *now = (const uint64_t *)t->c, *then = (const uint64_t *)&m->c;
	for (size_t i = 0; i < sizeof *t->c / sizeof(uint64_t); i++)
		sum[i] += now[i] - then[i];
	for (int k = 0; k < MT_KERNEL_COUNT; k++) {
		uint64_t own = k < MT_SYS_COUNT ? b->v[MT_KERNEL_COUNT + k] -
							  a->v[MT_KERNEL_COUNT + k]
						: 0;
		g->f.kernel_valid[k] &= a->v[k] && b->v[k];
		g->f.kernel[k] += mt_less_own(b->v[k] - a->v[k], own);
	}
	const int cpu = MT_KERNEL_COUNT + MT_SYS_COUNT;
	g->f.user_s += (double)(b->v[cpu] - a->v[cpu]) / 1e6;
	g->f.system_s += (double)(b->v[cpu + 1] - a->v[cpu + 1]) / 1e6;
	g->f.rusage_minor_faults += b->v[cpu + 2] - a->v[cpu + 2];
	g->f.rusage_major_faults += b->v[cpu + 3] - a->v[cpu + 3];
	int64_t large = t->large_peak - m->large_live;
	if (large > 0 && (uint64_t)large > g->f.large_max_live)
		g->f.large_max_live = (uint64_t)large;
	if (m->outer_large_peak > t->large_peak)
		t->large_peak = m->outer_large_peak;
}

/* After a region's close: out of the last one, the thread's counters are
 * the process's again. */
static void closed(struct replay *r, struct thread *t)
{
	if (!t->open && !t->ending)
		leave_regions(r, t);
}

static void begin_region(struct replay *r, struct thread *t, uint64_t id)
{
	if (t->open == t->cap) {
		unsigned cap = t->cap ? 2 * t->cap : 4;
		struct mark *more = realloc(t->marks, cap * sizeof *more);
		if (!more) {
			r->failed = true;
			return;
		}
		t->marks = more;
		t->cap = cap;
	}
	if (!t->c && !(t->c = calloc(1, sizeof *t->c))) {
		r->failed = true;
		return;
	}
	struct mark *m = &t->marks[t->open++];
	m->region = id;
	m->c = *t->c;
	m->at = t->last;
	m->outer_large_peak = t->large_peak;
	m->large_live = t->large_live;
	m->wall_ns = 0;
	t->large_peak = m->large_live;
}

/* A thread ends: what it counted stays in the process's figures. */
static void thread_left(struct replay *r, struct thread *t)
{
	if (t->ending)
		close_region(r, t);
	leave_regions(r, t);
	if (t->large_peak > r->large_max)
		r->large_max = t->large_peak;
	mt_idmap_del(&r->threads, t->tid);
	if (r->recent == t)
		r->recent = NULL;
	free(t->marks);
	free(t);
}

bool mt_baseline_counters(const struct mt_event *e, struct mt_counters *c,
			  uint64_t *peak)
{
	size_t n = sizeof(struct mt_counters) / sizeof(uint64_t);
	/* The counters, then the peak of live bytes.  Format 1.17's
	 * counters are today's without the purges' bytes touched and the
	 * program's purges again (the last six fields), 1.16's also without
	 * calloc's purges (the two before), 1.15's also without the malloc_trim calls (the five
	 * before), 1.14's also without the remaps (the four before),
	 * 1.12's also without the unmapped bytes touched (the four before),
	 * 1.11's also without the large blocks' freed bytes, 1.9's also
	 * without the realloc moves (the two before), 1.8's also without
	 * sys_bytes_by_allocator; older layouts differ inside, and are not
	 * read. */
	size_t before_1_18 = n - 6, before_1_17 = before_1_18 - 2,
	       before_1_16 = before_1_17 - 5,
	       before_1_15 = before_1_16 - 4,
	       before_1_13 = before_1_15 - 4,
	       before_1_12 = before_1_13 - 1, before_1_10 = before_1_12 - 2,
	       before_1_9 = before_1_10 - MT_SYS_COUNT;
	if ((size_t)e->nv != n + 1 && (size_t)e->nv != before_1_18 + 1 &&
	    (size_t)e->nv != before_1_17 + 1 &&
	    (size_t)e->nv != before_1_16 + 1 &&
	    (size_t)e->nv != before_1_15 + 1 &&
	    (size_t)e->nv != before_1_13 + 1 &&
	    (size_t)e->nv != before_1_12 + 1 &&
	    (size_t)e->nv != before_1_10 + 1 && (size_t)e->nv != before_1_9 + 1)
		return false;
	n = (size_t)e->nv - 1;
	memset(c, 0, sizeof *c);
	memcpy(c, e->baseline.values, n * sizeof(uint64_t));
	*peak = e->baseline.values[n];
	return true;
}

static void baseline(struct replay *r, struct thread *t, const struct mt_event *e)
{
	struct mt_counters c;
	uint64_t peak;
	if (!mt_baseline_counters(e, &c, &peak))
		return;
	mt_counters_add(counters(r, t), &c);
	t->large_live = (int64_t)(c.large_allocs - c.large_frees);
	r->live = (int64_t)(c.allocated - c.freed);
	r->peak = (int64_t)peak;
}

static void name_region(struct replay *r, const struct mt_event *e)
{
	struct region *g = region_of(r, e->region_name.id);
	char *name = g ? strndup(e->text, e->text_len) : NULL;
	if (!name) {
		r->failed = true;
		return;
	}
	free(g->name);
	g->name = name;
}

static bool on_event(const struct mt_event *e, void *arg)
{
	struct replay *r = arg;
	struct thread *t = thread_of(r, e->tid);
	if (e->ns > r->rec.last_ns)
		r->rec.last_ns = e->ns;
	if (!t)
		return false;
	mt_fault_sites_event(r->fault_sites, e);
	switch (e->tag) {
	case MT_EV_ALLOC:
		if (e->alloc.entry == MT_CALL_CALLOC && e->alloc.size >= MT_LARGE_BYTES &&
		    e->alloc.ptr && t->purge_lo < e->alloc.ptr + e->alloc.size &&
		    t->purge_hi > e->alloc.ptr) {
			mt_count_calloc_purges(counters(r, t), t->purges_pending,
					       t->purged_pending);
		}
		alloc(r, t, (int)e->alloc.entry, e->alloc.size, e->alloc.usable);
		break;
	case MT_EV_FREE:
		mt_count_call(counters(r, t), MT_CALL_FREE);
		if (e->free.ptr)
			release(r, t, e->free.usable);
		break;
	case MT_EV_REALLOC:
		if (e->realloc.old_freed && e->realloc.ptr &&
		    e->realloc.ptr != e->realloc.old_ptr) {
			uint64_t copied = e->realloc.old_usable < e->realloc.size
						  ? e->realloc.old_usable
						  : e->realloc.size;
			mt_count_realloc_move(counters(r, t),
					      t->remapped ? 0 : copied);
		}
		t->remapped = false;
		if (e->realloc.old_freed)
			release(r, t, e->realloc.old_usable);
		alloc(r, t, (int)e->realloc.entry, e->realloc.size,
		      e->realloc.usable);
		break;
	case MT_EV_USABLE_SIZE:
		mt_count_call(counters(r, t), MT_CALL_MALLOC_USABLE_SIZE);
		break;
	case MT_EV_SYSCALL:
		mt_count_sys_entry(counters(r, t), (enum mt_call)e->syscall.entry,
				   e->syscall.by_allocator);
		if (e->syscall.entry == MT_CALL_MADVISE && e->syscall.by_allocator &&
		    (e->syscall.arg == MADV_DONTNEED || e->syscall.arg == MADV_FREE)) {
			uint64_t lo = e->syscall.addr, hi = lo + e->syscall.len;
			if (!t->purge_hi || lo < t->purge_lo)
				t->purge_lo = lo;
			if (hi > t->purge_hi)
				t->purge_hi = hi;
		}
		break;
	case MT_EV_SYS_COUNT: {
		const struct mt_ev_sys *s = &e->sys;
		if (s->sys == MT_SYS_MADVISE && s->by_allocator &&
		    (s->advice == MADV_DONTNEED || s->advice == MADV_FREE)) {
			t->purges_pending++;
			t->purged_pending += s->bytes;
		}
		if (s->sys == MT_SYS_MADVISE)
			mt_count_madvise(counters(r, t), (int)s->advice, s->bytes,
					 s->by_allocator);
		else if (s->sys < MT_SYS_COUNT)
			mt_count_sys(counters(r, t), (enum mt_sys)s->sys, s->bytes,
				     s->by_allocator);
		break;
	}
	case MT_EV_HEAP_MOVE:
		counters(r, t)->sys_inferred[MT_SYS_BRK] +=
			e->heap_move.inferred_syscalls;
		mt_count_brk_move(counters(r, t), e->heap_move.from, e->heap_move.to);
		break;
	case MT_EV_CHUNK_MAP:
		/* (mremap: the shim's, inside a realloc that moves nothing) */
		t->remapped = e->chunk_map.sys == MT_SYS_MREMAP;
		if (e->chunk_map.sys < MT_SYS_COUNT)
			mt_count_inferred(counters(r, t),
					  (enum mt_sys)e->chunk_map.sys,
					  e->chunk_map.bytes);
		break;
	case MT_EV_REGION_NAME:
		name_region(r, e);
		break;
	case MT_EV_COUNTERS:
		memset(&t->last, 0, sizeof t->last);
		memcpy(t->last.v, e->counters.values,
		       (size_t)(e->nv < NCOUNTERS ? e->nv : NCOUNTERS) *
			       sizeof *t->last.v);
		if (t->ending) {
			close_region(r, t);
			closed(r, t);
		}
		break;
	case MT_EV_REGION_BEGIN:
		if (t->ending)
			close_region(r, t);
		begin_region(r, t, e->region_begin.id);
		break;
	case MT_EV_REGION_END:
		if (t->ending) {
			close_region(r, t);
			closed(r, t);
		}
		if (t->open) {
			t->open--;
			t->marks[t->open].wall_ns = e->region_end.wall_ns;
			t->ending = true;
		}
		break;
	case MT_EV_BASELINE:
		baseline(r, t, e);
		break;
	case MT_EV_THREAD_EXIT:
		thread_left(r, t);
		break;
	case MT_EV_FAULT:
		r->fault_samples++;
		break;
	case MT_EV_BLOCK_SITE:
		break; /* (fault_sites.c) */
	case MT_EV_CHUNK_REMAP:
		mt_count_remap(counters(r, t), e->chunk_remap.from_bytes,
			       e->chunk_remap.to_bytes);
		break;
	case MT_EV_MALLOC_TRIM:
		mt_count_malloc_trim(counters(r, t), e->malloc_trim.shrink_bytes,
				     e->malloc_trim.purged_bytes);
		break;
	case MT_EV_UNMAP_TOUCHED:
		mt_count_unmap_touched(counters(r, t), e->unmap_touched.bytes,
				       e->unmap_touched.huge_bytes,
				       e->unmap_touched.by_allocator);
		break;
	case MT_EV_OWN_PURGE_AGAIN:
		mt_count_own_purge_again(counters(r, t), e->own_purge_again.bytes);
		break;
	case MT_EV_PURGE_TOUCHED:
		mt_count_purge_touched(counters(r, t), e->purge_touched.bytes,
				       e->purge_touched.huge_bytes,
				       e->purge_touched.by_allocator);
		break;
	case MT_EV_RSS:
		keep_rss(r, e);
		break;
	case MT_EV_PROGRESS:
		if (!r->progressed || e->progress.wall_us >= r->progress.wall_us) {
			r->progress = e->progress;
			r->progress_ns = e->ns;
		}
		r->progressed = true;
		break;
	case MT_EV_SAMPLES_LOST:
		r->fault_samples_lost += e->samples_lost.count;
		break;
	case MT_EV_LOST:
		mt_recording_lost(&r->rec, e->tid, e->lost.count);
		break;
	case MT_EV_EXEC:
		r->rec.exec = true;
		snprintf(r->rec.exec_path, sizeof r->rec.exec_path, "%.*s",
			 (int)e->text_len, e->text);
		break;
	case MT_EV_EXIT:
		json_decref(r->exit);
		r->exit = json_loadb(e->text, e->text_len, 0, NULL);
		break;
	case MT_EV_SITES: { /* the latest, for a process that never exits */
		json_t *event = json_loadb(e->text, e->text_len, 0, NULL);
		if (!r->site_tree)
			r->site_tree = json_object();
		json_t *sites = event ? mt_site_tree_take(r->site_tree, event)
				      : NULL;
		json_decref(event);
		if (sites && (!r->sites_so_far || e->ns >= r->sites_ns)) {
			json_decref(r->sites_so_far);
			r->sites_so_far = sites;
			r->sites_ns = e->ns;
		} else {
			json_decref(sites);
		}
		break;
	}
	}
	/* (a call's event ends what its purges could be) */
	if (e->tag == MT_EV_ALLOC || e->tag == MT_EV_FREE || e->tag == MT_EV_REALLOC)
		t->purges_pending = t->purged_pending = t->purge_lo = t->purge_hi = 0;
	return !r->failed;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int by_id(const void *a, const void *b)
{
	const struct region *x = *(struct region *const *)a,
			    *y = *(struct region *const *)b;
	return (x->id > y->id) - (x->id < y->id);
}

static uint64_t u64(json_t *o, const char *k)
{
	return (uint64_t)json_integer_value(json_object_get(o, k));
}

/* What no event carries comes from the closing record: the kernel totals,
 * getrusage, wall time, peaks. */
static void from_exit(json_t *x, struct mt_summary *s)
{
	json_t *src = json_object_get(x, "sources");
	json_t *sys = json_object_get(x, "syscalls");
	json_t *pf = json_object_get(x, "page_faults");
	json_t *cpu = json_object_get(x, "cpu_s");

	for (int i = 0; i < MT_SYS_COUNT; i++) {
		const char *from = json_string_value(json_object_get(
			json_object_get(src, "syscalls"), mt_sys_names[i]));
		s->f.kernel_valid[i] = from && strcmp(from, "kernel") == 0;
		s->f.kernel[i] = u64(sys, mt_sys_names[i]);
	}
	const char *faults = json_string_value(json_object_get(src, "page_faults"));
	bool kernel_faults = faults && strcmp(faults, "kernel") == 0;
	s->f.kernel_valid[MT_KERNEL_MINOR_FAULTS] = kernel_faults;
	s->f.kernel_valid[MT_KERNEL_MAJOR_FAULTS] = kernel_faults;
	s->f.kernel[MT_KERNEL_MINOR_FAULTS] = s->f.rusage_minor_faults = u64(pf, "minor");
	s->f.kernel[MT_KERNEL_MAJOR_FAULTS] = s->f.rusage_major_faults = u64(pf, "major");
	s->f.user_s = json_number_value(json_object_get(cpu, "user"));
	s->f.system_s = json_number_value(json_object_get(cpu, "system"));
	s->wall_s = json_number_value(json_object_get(x, "wall_s"));
	s->threads = (unsigned)u64(x, "threads");
	s->forks = (unsigned)u64(x, "forks");
	s->peak_rss_bytes = u64(x, "peak_rss_bytes");
	json_t *bytes = json_object_get(x, "bytes");
	if (json_is_false(json_object_get(bytes, "peak_live_exact"))) {
		s->peak_sampled = true;
		s->peak_live = u64(bytes, "peak_live");
	}
	json_t *shim = json_object_get(x, "shim_syscalls");
	for (int i = 0; i < MT_SYS_COUNT; i++)
		s->shim_syscalls[i] = u64(shim, mt_sys_names[i]);
	s->fault_period = (unsigned)u64(x, "fault_period");
	json_t *k = json_object_get(x, "shim_cost");
	if (json_is_object(k)) {
		s->shim_cost.known = true;
		const char *mode = json_string_value(json_object_get(k, "mode"));
		s->shim_cost.tracing = mode && strcmp(mode, "trace") == 0;
		s->shim_cost.calls_s = json_number_value(json_object_get(k, "calls_s"));
		s->shim_cost.threads_s = json_number_value(json_object_get(k, "threads_s"));
		s->shim_cost.start_s = json_number_value(json_object_get(k, "start_s"));
		s->shim_cost.thread_starts_s =
			json_number_value(json_object_get(k, "thread_starts_s"));
		s->shim_cost.regions_s =
			json_number_value(json_object_get(k, "regions_s"));
		s->shim_cost.faults = u64(k, "faults");
		s->shim_cost.estimated_s = json_number_value(json_object_get(k, "estimated_s"));
		s->shim_cost.share = json_number_value(json_object_get(k, "share_of_run"));
	}
	json_t *g = json_object_get(x, "glibc_thresholds");
	if (g) {
		s->glibc_heap = s->f.glibc_inference = true;
		s->mmap_threshold = u64(g, "mmap");
		s->trim_threshold = u64(g, "trim");
		s->threshold_raises = u64(g, "raises");
		s->thresholds_dynamic = json_is_true(json_object_get(g, "dynamic"));
		s->thresholds_by_mallopt = json_is_true(json_object_get(g, "by_mallopt"));
	}
	json_t *gone = json_object_get(x, "thread_heaps_deleted");
	s->heaps_deleted = u64(gone, "count");
	s->heaps_deleted_bytes = u64(gone, "bytes");
}

/* A process that never wrote its closing record: what the kernel keeps
 * (system calls, faults, CPU, wall time) as its last progress event had
 * it; its peak resident, the most its resident samples saw. */
static void from_progress(const struct replay *r, struct mt_summary *s)
{
	const struct mt_ev_progress *g = &r->progress;
	const uint64_t kernel[MT_KERNEL_COUNT] = {
		[MT_SYS_BRK] = g->brk,
		[MT_SYS_MMAP] = g->mmap,
		[MT_SYS_MUNMAP] = g->munmap,
		[MT_SYS_MREMAP] = g->mremap,
		[MT_SYS_MADVISE] = g->madvise,
		[MT_SYS_MPROTECT] = g->mprotect,
		[MT_KERNEL_MINOR_FAULTS] = g->minor_faults,
		[MT_KERNEL_MAJOR_FAULTS] = g->major_faults,
	};
	for (int i = 0; i < MT_KERNEL_COUNT; i++) {
		s->f.kernel_valid[i] = kernel[i] != 0;
		s->f.kernel[i] = kernel[i] ? kernel[i] - 1 : 0;
	}
	s->f.rusage_minor_faults = g->rusage_minor;
	s->f.rusage_major_faults = g->rusage_major;
	if (!s->f.kernel_valid[MT_KERNEL_MINOR_FAULTS]) {
		s->f.kernel[MT_KERNEL_MINOR_FAULTS] = g->rusage_minor;
		s->f.kernel[MT_KERNEL_MAJOR_FAULTS] = g->rusage_major;
	}
	s->f.user_s = (double)g->user_us / 1e6;
	s->f.system_s = (double)g->system_us / 1e6;
	s->wall_s = (double)g->wall_us / 1e6;
	s->threads = (unsigned)g->threads;
	for (size_t i = 0; i < r->rss_len; i++) {
		uint64_t resident = r->rss[i].s.anon_bytes + r->rss[i].s.file_bytes;
		if (resident > s->peak_rss_bytes)
			s->peak_rss_bytes = resident;
	}
}

/* The end of the events: threads still running, calls still open. */
static void finish_threads(struct replay *r, struct mt_summary *s)
{
	int64_t large_max = r->large_max;
	s->f.c = r->total;
	for (size_t i = 0; i < r->threads.cap; i++) {
		struct thread *t = mt_idmap_at(&r->threads, i);
		if (!t)
			continue;
		/* Without the closing record, a call whose end came without
		 * its counters is cut off: left out, not counted as empty. */
		if (t->ending && r->exit)
			close_region(r, t);
		if (t->c)
			mt_counters_add(&s->f.c, t->c);
		if (t->large_peak > large_max)
			large_max = t->large_peak;
		/* Cut off inside a region: its peak is the outer one too. */
		for (unsigned k = 0; !r->exit && k < t->open; k++)
			if (t->marks[k].outer_large_peak > large_max)
				large_max = t->marks[k].outer_large_peak;
	}
	s->f.large_max_live = large_max > 0 ? (uint64_t)large_max : 0;
}

/* The regions by id (the live summary's order), as summaries. */
static struct mt_region_summary *region_list(struct replay *r, const struct mt_summary *s,
					     size_t *count)
{
	struct region **all = calloc(r->regions.len + 1, sizeof *all);
	struct mt_region_summary *out = calloc(r->regions.len + 1, sizeof *out);
	size_t n = 0;
	if (!all || !out) {
		free(all);
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < r->regions.cap; i++) {
		struct region *g = mt_idmap_at(&r->regions, i);
		if (g && (g->seen || (g->name && g->name[0])))
			all[n++] = g;
	}
	qsort(all, n, sizeof *all, by_id);
	for (size_t k = 0; k < n; k++) {
		struct region *g = all[k];
		struct mt_region_summary *o = &out[k];
		if (g->ndurations)
			qsort(g->durations, g->ndurations, sizeof *g->durations, by_value);
		o->name = g->name ? g->name : "";
		o->calls = g->calls;
		o->wall_total_s = (double)g->wall_total / 1e9;
		o->wall_min_s = g->calls ? (double)g->wall_min / 1e9 : 0;
		o->wall_median_s = g->ndurations
					   ? (double)g->durations[g->ndurations / 2] / 1e9
					   : 0;
		o->f = g->f;
		o->f.glibc_inference = s->f.glibc_inference;
		if (!g->calls)
			memset(o->f.kernel_valid, 0, sizeof o->f.kernel_valid);
	}
	free(all);
	*count = n;
	return out;
}

/* The command line of the metadata, NULL-terminated. */
static const char **command(json_t *meta)
{
	json_t *cmd = json_object_get(meta, "command"), *arg;
	size_t n = 0, i;
	const char **argv = calloc(json_array_size(cmd) + 1, sizeof *argv);
	if (!argv)
		return NULL;
	json_array_foreach(cmd, i, arg) if (json_string_value(arg))
		argv[n++] = json_string_value(arg);
	return argv;
}

/* The summary of the events replayed, with the trace's metadata. */
static bool fill_summary(struct replay *r, struct mt_trace *t, struct mt_summary *s)
{
	json_t *meta = mt_trace_metadata(t);

	memset(s, 0, sizeof *s);
	s->pid = (long)u64(meta, "pid");
	s->argv = r->argv = command(meta);
	json_t *be = json_object_get(meta, "backend");
	s->backend_name = json_string_value(json_object_get(be, "name"));
	s->backend_library = json_string_value(json_object_get(be, "library"));
	s->backend_version = json_string_value(json_object_get(be, "version"));
	/* (as the shim has it on glibc, whose moves out of sight the events
	 * infer: a process killed before its closing record said so had
	 * "0 mmap" beside 100 inferred; new-user trial 32) */
	s->f.glibc_inference = s->backend_name && !strcmp(s->backend_name, "glibc");
	finish_threads(r, s);
	s->peak_live = r->peak > 0 ? (uint64_t)r->peak : 0;

	/* The call sites are the shim's, at exit (sites.h), or as last
	 * written before a process ended otherwise. */
	json_t *at = r->sites_so_far;
	if (at && r->site_tree)
		mt_site_tree_expand(r->site_tree, at);
	if (r->exit) {
		from_exit(r->exit, s);
		if (json_object_get(r->exit, "sites"))
			at = json_object_get(r->exit, "sites");
	} else if (r->progressed) {
		from_progress(r, s);
	}
	s->fault_samples_on_sites = -1;
	uint64_t on_sites;
	if (at && s->fault_period && r->fault_samples &&
	    mt_fault_sites_apply(r->fault_sites, at, s->fault_period, &on_sites))
		s->fault_samples_on_sites = (int64_t)on_sites;
	s->sites_json = r->sites = at ? json_dumps(at, JSON_COMPACT) : NULL;
	s->fault_samples = r->fault_samples;
	s->fault_samples_lost = r->fault_samples_lost;
	fold_rss(r, &s->resident);
	s->regions = r->summaries = region_list(r, s, &s->region_count);
	/* (killed: a consumer thread's last frees lost made a queue's 14 MiB
	 * "peak live 286.4 MiB", its producer's last allocations lost made
	 * 4,074 frees of 3,950 blocks; new-user trial 28) */
	s->peak_unknown = !r->exit && s->f.c.freed > s->f.c.allocated;
	return r->argv && r->summaries;
}

static void replay_free(struct replay *r)
{
	for (size_t i = 0; i < r->regions.cap; i++) {
		struct region *g = mt_idmap_at(&r->regions, i);
		if (g) {
			free(g->durations);
			free(g->name);
			free(g);
		}
	}
	mt_idmap_free(&r->regions);
	for (size_t i = 0; i < r->threads.cap; i++) {
		struct thread *th = mt_idmap_at(&r->threads, i);
		if (th) {
			free(th->c);
			free(th->marks);
			free(th);
		}
	}
	mt_idmap_free(&r->threads);
	json_decref(r->exit);
	mt_recording_free(&r->rec);
	free(r->argv);
	free(r->summaries);
	free(r->sites);
	json_decref(r->sites_so_far);
	json_decref(r->site_tree);
	free(r->rss);
	mt_fault_sites_free(r->fault_sites);
	free(r);
}

bool mt_replay(struct mt_trace *t, bool salvage, struct mt_replayed *out,
	       char *err, size_t errlen)
{
	struct replay *r = calloc(1, sizeof *r);

	memset(out, 0, sizeof *out);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	out->state = r;
	r->fault_sites = mt_fault_sites_new(mt_trace_start_ns(t));
	if (!r->fault_sites) {
		snprintf(err, errlen, "out of memory");
		mt_replayed_free(out);
		return false;
	}
	if (!mt_trace_each(t, salvage, on_event, r, err, errlen) || r->failed) {
		if (r->failed)
			snprintf(err, errlen, "out of memory");
		mt_replayed_free(out);
		return false;
	}
	r->rec.closed = r->exit != NULL;
	r->rec.measured_to_s = r->progressed ? (double)r->progress.wall_us / 1e6 : 0;
	/* (the progress event's clock is the run's, the events' the trace's) */
	if (!r->exit && r->progressed && r->sites_so_far && r->sites_ns < r->progress_ns)
		r->rec.sites_to_s = r->rec.measured_to_s -
				    (double)(r->progress_ns - r->sites_ns) / 1e9;
	r->rec.fault_sampled = r->exit && u64(r->exit, "fault_period");
	r->rec.lost_samples = r->fault_samples_lost;
	mt_recording_read(&r->rec, t);
	out->recording = &r->rec;
	if (!fill_summary(r, t, &out->summary)) {
		snprintf(err, errlen, "out of memory");
		mt_replayed_free(out);
		return false;
	}
	return true;
}

void mt_replayed_free(struct mt_replayed *r)
{
	if (r->state)
		replay_free(r->state);
	memset(r, 0, sizeof *r);
}
