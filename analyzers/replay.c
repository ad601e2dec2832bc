#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "replay.h"
#include "summary.h"

enum { MAX_THREADS = 4096, MAX_OPEN = 16, MAX_REGIONS = 256,
       MAX_DURATIONS = 1 << 20, NCOUNTERS = MT_KERNEL_COUNT + MT_SYS_COUNT + 4 };

/* A COUNTERS event: kernel counters (+1, 0 = none), the shim's own
 * syscalls, then CPU (us) and faults of the thread. */
struct snapshot {
	uint64_t v[NCOUNTERS];
};

struct mark {
	int region;
	struct mt_counters c;
	struct snapshot at;
	int64_t outer_large_peak, large_live;
	uint64_t wall_ns; /* set by the end, completed by its counters */
};

struct thread {
	uint32_t tid;
	struct mt_counters c;
	int64_t large_peak;
	struct snapshot last;
	struct mark marks[MAX_OPEN];
	unsigned open;
	bool ending; /* a region end waits for its counters */
};

struct region {
	char name[64];
	uint64_t calls, wall_total, wall_min;
	uint64_t *durations;
	size_t ndurations;
	struct mt_figures f;
	bool seen;
};

struct replay {
	struct thread **threads; /* as they appear */
	size_t nthreads, cap;
	struct region regions[MAX_REGIONS];
	int64_t live, peak;
	uint64_t fault_samples, fault_samples_lost;
	json_t *exit;
};

static struct thread *thread_of(struct replay *r, uint32_t tid)
{
	/* Most events are the same thread's as the one before. */
	for (size_t i = r->nthreads; i-- > 0;)
		if (r->threads[i]->tid == tid)
			return r->threads[i];
	if (r->nthreads == MAX_THREADS)
		return NULL;
	if (r->nthreads == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 8;
		struct thread **more = realloc(r->threads, cap * sizeof *more);
		if (!more)
			return NULL;
		r->threads = more;
		r->cap = cap;
	}
	struct thread *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->tid = tid;
	r->threads[r->nthreads++] = t;
	return t;
}

static void large_alloc(struct thread *t, uint64_t usable)
{
	t->c.large_allocs++;
	t->c.large_bytes += usable;
	int64_t live = (int64_t)(t->c.large_allocs - t->c.large_frees);
	if (live > t->large_peak)
		t->large_peak = live;
}

static void alloc(struct replay *r, struct thread *t, int entry, uint64_t size,
		  uint64_t usable)
{
	mt_count_alloc(&t->c, (enum mt_call)entry, size, usable);
	if (usable >= MT_LARGE_BYTES)
		large_alloc(t, usable);
	r->live += (int64_t)usable;
	if (r->live > r->peak)
		r->peak = r->live;
}

static void release(struct replay *r, struct thread *t, uint64_t usable)
{
	mt_count_free(&t->c, usable);
	if (usable >= MT_LARGE_BYTES)
		t->c.large_frees++;
	r->live -= (int64_t)usable;
}

/* A region call ends: its figures are what changed since the begin. */
static void close_region(struct replay *r, struct thread *t)
{
	struct mark *m = &t->marks[t->open];
	const struct snapshot *a = &m->at, *b = &t->last;
	t->ending = false;
	if (m->region < 0 || m->region >= MAX_REGIONS)
		return;
	struct region *g = &r->regions[m->region];
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
	if (!g->durations)
		g->durations = malloc(MAX_DURATIONS * sizeof *g->durations);
	if (g->durations && g->ndurations < MAX_DURATIONS)
		g->durations[g->ndurations++] = m->wall_ns;

	uint64_t *sum = (uint64_t *)&g->f.c;
	const uint64_t *now = (const uint64_t *)&t->c, *then = (const uint64_t *)&m->c;
	for (size_t i = 0; i < sizeof t->c / sizeof(uint64_t); i++)
		sum[i] += now[i] - then[i];
	for (int k = 0; k < MT_KERNEL_COUNT; k++) {
		uint64_t own = k < MT_SYS_COUNT ? b->v[MT_KERNEL_COUNT + k] -
							  a->v[MT_KERNEL_COUNT + k]
						: 0;
		g->f.kernel_valid[k] &= a->v[k] && b->v[k];
		g->f.kernel[k] += b->v[k] - a->v[k] - own;
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

static bool on_event(const struct mt_event *e, void *arg)
{
	struct replay *r = arg;
	struct thread *t = thread_of(r, e->tid);
	const uint64_t *v = e->v;

	if (!t)
		return true;
	switch (e->tag) {
	case MT_EV_ALLOC:
		alloc(r, t, (int)v[0], v[2], v[4]);
		break;
	case MT_EV_FREE:
		mt_count_call(&t->c, MT_CALL_FREE);
		if (v[0])
			release(r, t, v[1]);
		break;
	case MT_EV_REALLOC:
		if (v[1])
			release(r, t, v[3]);
		alloc(r, t, (int)v[0], v[4], v[6]);
		break;
	case MT_EV_USABLE_SIZE:
		mt_count_call(&t->c, MT_CALL_MALLOC_USABLE_SIZE);
		break;
	case MT_EV_SYSCALL:
		mt_count_sys_entry(&t->c, (enum mt_call)v[0], v[1]);
		break;
	case MT_EV_SYS_COUNT:
		if (v[0] == MT_SYS_MADVISE)
			mt_count_madvise(&t->c, (int)v[3], v[2], v[1]);
		else if (v[0] < MT_SYS_COUNT)
			mt_count_sys(&t->c, (enum mt_sys)v[0], v[2], v[1]);
		break;
	case MT_EV_HEAP_MOVE:
		t->c.sys_inferred[MT_SYS_BRK] += v[2];
		mt_count_brk_move(&t->c, v[0], v[1]);
		break;
	case MT_EV_CHUNK_MAP:
		if (v[0] < MT_SYS_COUNT) {
			t->c.sys_inferred[v[0]]++;
			t->c.sys_inferred_bytes[v[0]] += v[1];
		}
		break;
	case MT_EV_REGION_NAME:
		if (v[0] < MAX_REGIONS)
			snprintf(r->regions[v[0]].name, sizeof r->regions[0].name,
				 "%.*s", (int)e->text_len, e->text);
		break;
	case MT_EV_COUNTERS:
		memset(&t->last, 0, sizeof t->last);
		memcpy(t->last.v, v,
		       (size_t)(e->nv < NCOUNTERS ? e->nv : NCOUNTERS) * sizeof *v);
		if (t->ending)
			close_region(r, t);
		break;
	case MT_EV_REGION_BEGIN:
		if (t->ending)
			close_region(r, t);
		if (t->open < MAX_OPEN) {
			struct mark *m = &t->marks[t->open++];
			m->region = (int)v[0];
			m->c = t->c;
			m->at = t->last;
			m->outer_large_peak = t->large_peak;
			m->large_live = (int64_t)(t->c.large_allocs - t->c.large_frees);
			t->large_peak = m->large_live;
		}
		break;
	case MT_EV_REGION_END:
		if (t->ending)
			close_region(r, t);
		if (t->open) {
			t->open--;
			t->marks[t->open].wall_ns = v[1];
			t->ending = true;
		}
		break;
	case MT_EV_BASELINE: {
		size_t n = sizeof t->c / sizeof(uint64_t);
		if ((size_t)e->nv == n + 1) {
			memcpy(&t->c, v, sizeof t->c);
			r->live = (int64_t)(t->c.allocated - t->c.freed);
			r->peak = (int64_t)v[n];
		}
		break;
	}
	case MT_EV_FAULT:
		r->fault_samples++;
		break;
	case MT_EV_SAMPLES_LOST:
		r->fault_samples_lost += v[0];
		break;
	case MT_EV_EXIT:
		json_decref(r->exit);
		r->exit = json_loadb(e->text, e->text_len, 0, NULL);
		break;
	}
	return true;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
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
	json_t *g = json_object_get(x, "glibc_thresholds");
	if (g) {
		s->glibc_heap = s->f.glibc_inference = true;
		s->mmap_threshold = u64(g, "mmap");
		s->trim_threshold = u64(g, "trim");
		s->threshold_raises = u64(g, "raises");
		s->thresholds_dynamic = json_is_true(json_object_get(g, "dynamic"));
	}
}

char *mt_replay_summary(struct mt_trace *t, bool salvage, char *err, size_t errlen)
{
	struct replay *r = calloc(1, sizeof *r);
	struct mt_region_summary regions[MAX_REGIONS];
	const char *argv[256];
	char *out = NULL;

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!mt_trace_each(t, salvage, on_event, r, err, errlen))
		goto done;
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i]->ending)
			close_region(r, r->threads[i]);
	if (!r->exit) {
		snprintf(err, errlen, "the trace has no closing record (the process "
				      "was killed, or left by _exit): figures at "
				      "exit are missing; memtrace dump shows what "
				      "was recorded");
		goto done;
	}

	json_t *meta = mt_trace_metadata(t);
	struct mt_summary s;
	memset(&s, 0, sizeof s);
	s.pid = (long)u64(meta, "pid");
	size_t n = 0, i;
	json_t *arg;
	json_array_foreach(json_object_get(meta, "command"), i, arg) if (n < 255)
		argv[n++] = json_string_value(arg);
	argv[n] = NULL;
	s.argv = argv;
	json_t *be = json_object_get(meta, "backend");
	s.backend_name = json_string_value(json_object_get(be, "name"));
	s.backend_library = json_string_value(json_object_get(be, "library"));
	s.backend_version = json_string_value(json_object_get(be, "version"));
	for (size_t k = 0; k < r->nthreads; k++) {
		mt_counters_add(&s.f.c, &r->threads[k]->c);
		if ((uint64_t)r->threads[k]->large_peak > s.f.large_max_live)
			s.f.large_max_live = (uint64_t)r->threads[k]->large_peak;
	}
	s.peak_live = r->peak > 0 ? (uint64_t)r->peak : 0;
	from_exit(r->exit, &s);
	s.fault_samples = r->fault_samples;
	s.fault_samples_lost = r->fault_samples_lost;

	for (int k = 0; k < MAX_REGIONS; k++) {
		struct region *g = &r->regions[k];
		if (!g->seen && !g->name[0])
			continue;
		struct mt_region_summary *o = &regions[s.region_count++];
		if (g->ndurations)
			qsort(g->durations, g->ndurations, sizeof *g->durations, by_value);
		o->name = g->name;
		o->calls = g->calls;
		o->wall_total_s = (double)g->wall_total / 1e9;
		o->wall_min_s = g->calls ? (double)g->wall_min / 1e9 : 0;
		o->wall_median_s = g->ndurations
					   ? (double)g->durations[g->ndurations / 2] / 1e9
					   : 0;
		o->f = g->f;
		o->f.glibc_inference = s.f.glibc_inference;
		if (!g->calls)
			memset(o->f.kernel_valid, 0, sizeof o->f.kernel_valid);
	}
	s.regions = regions;

	size_t size = 16384 + (s.region_count + 1) * 8192;
	out = malloc(size);
	if (!out || !mt_summary_json(&s, out, size)) {
		free(out);
		out = NULL;
		snprintf(err, errlen, "out of memory");
	}
done:
	for (int k = 0; k < MAX_REGIONS; k++)
		free(r->regions[k].durations);
	json_decref(r->exit);
	for (size_t k = 0; k < r->nthreads; k++)
		free(r->threads[k]);
	free(r->threads);
	free(r);
	return out;
}
