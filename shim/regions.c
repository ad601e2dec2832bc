#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "diag.h"
#include "kcounters.h"
#include "ksamples.h"
#include "owned_lock.h"
#include "rawsys.h"
#include "visibility.h"
#include "memtrace.h"
#include "regions.h"
#include "symbols.h"
#include "thread.h"
#include "emit.h"
#include "memtrace/trace_format.h"


enum { MAX_OPEN = 16, MAX_REGIONS = 256, NAME_LEN = 64 };
/* Durations kept per region, for the median; past that, the first ones. */
enum { MAX_DURATIONS = 1 << 20 };

/* What a region's begin saw, for its end to subtract. */
struct mt_region_mark {
	int region;
	uint64_t wall_ns;
	struct mt_counters c;
	struct mt_ksnapshot k;
	uint64_t shim[MT_SYS_COUNT]; /* the shim's own syscalls, taken out */
	struct rusage ru; /* this thread's */
	int64_t outer_large_peak;
	int64_t large_live; /* large blocks live at the begin */
	unsigned outer_region_now; /* the thread's, restored at the end */
	const char *outer_region_name_now;
};

struct region {
	char name[NAME_LEN];
	uint64_t calls;
	uint64_t wall_ns_total, wall_ns_min;
	uint64_t *durations;
	size_t durations_len;
	struct mt_figures f;
};

/* At exit the summary takes it, unless a signal handler called exit()
 * while its thread held it (in a region's begin or end). */
static mt_owned_lock lock;
static struct region *regions; /* MAX_REGIONS of them, mmapped */
static int region_count;
static struct mt_region_summary summaries[MAX_REGIONS];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* The index of `name`, added if new; -1 when the table is full. */
static int region_index(struct mt_thread *t, const char *name)
{
	for (int i = 0; i < region_count; i++)
		if (strncmp(regions[i].name, name, NAME_LEN - 1) == 0)
			return i;
	if (!regions && !(regions = mt_raw_mmap(MAX_REGIONS * sizeof *regions)))
		return -1;
	if (region_count == MAX_REGIONS) {
		mt_warn("more than %d region names; '%s' is not measured",
			MAX_REGIONS, name);
		return -1;
	}
	struct region *r = &regions[region_count];
	memset(r, 0, sizeof *r);
	strncpy(r->name, name, NAME_LEN - 1);
	r->wall_ns_min = UINT64_MAX;
	r->f.glibc_inference = mt_glibc_chunks;
	for (int k = 0; k < MT_KERNEL_COUNT; k++)
		r->f.kernel_valid[k] = true; /* until a call lacks one */
	MT_EMIT(region, t, MT_EV_REGION_NAME, region_count, r->name, 0);
	return region_count++;
}

static void keep_duration(struct region *r, uint64_t ns)
{
	if (r->durations_len == MAX_DURATIONS)
		return;
	if (!r->durations &&
	    !(r->durations = mt_raw_mmap(MAX_DURATIONS * sizeof(uint64_t))))
		return;
	r->durations[r->durations_len++] = ns;
}

/* What a region's end saw. */
struct mt_region_end {
	uint64_t wall_ns;
	struct mt_ksnapshot k;
	uint64_t shim[MT_SYS_COUNT];
	struct rusage ru;
};

static void take_marks(struct mt_ksnapshot *k, uint64_t shim[MT_SYS_COUNT],
		       struct rusage *ru)
{
	for (int i = 0; i < MT_SYS_COUNT; i++)
		shim[i] = __atomic_load_n(&mt_shim_syscalls[i], __ATOMIC_RELAXED);
	mt_kcounters_read(k);
	getrusage(RUSAGE_THREAD, ru);
}

/* A counters event: the kernel counters (each + 1, 0: not available), the
 * shim's own syscalls, then the thread's CPU time (us) and faults. */
static void emit_counters(struct mt_thread *t, const struct mt_ksnapshot *k,
			  const uint64_t *shim, const struct rusage *ru)
{
	uint64_t v[MT_COUNTERS_VALUES];
	size_t n = 0;
	for (int i = 0; i < MT_KERNEL_COUNT; i++)
		v[n++] = k->valid[i] ? k->value[i] + 1 : 0;
	for (int i = 0; i < MT_SYS_COUNT; i++)
		v[n++] = shim[i];
	v[n++] = (uint64_t)ru->ru_utime.tv_sec * 1000000u +
		 (uint64_t)ru->ru_utime.tv_usec;
	v[n++] = (uint64_t)ru->ru_stime.tv_sec * 1000000u +
		 (uint64_t)ru->ru_stime.tv_usec;
	v[n++] = (uint64_t)ru->ru_minflt;
	v[n++] = (uint64_t)ru->ru_majflt;
	MT_EMIT(counters, t, v, n);
}

static void add_call(struct region *r, const struct mt_region_mark *m,
		     struct mt_thread *t, const struct mt_region_end *e)
{
	uint64_t wall_ns = e->wall_ns - m->wall_ns;
	const struct mt_ksnapshot *k = &e->k;
	const struct rusage *ru = &e->ru;

	r->calls++;
	r->wall_ns_total += wall_ns;
	if (wall_ns < r->wall_ns_min)
		r->wall_ns_min = wall_ns;
	keep_duration(r, wall_ns);

	/* The thread's counters now less at the begin, field by field. */
	uint64_t *sum = (uint64_t *)&r->f.c;
	const uint64_t *now = (const uint64_t *)&t->c, *then = (const uint64_t *)&m->c;
	for (size_t i = 0; i < sizeof t->c / sizeof(uint64_t); i++)
		sum[i] += now[i] - then[i];

	for (int i = 0; i < MT_KERNEL_COUNT; i++) {
		uint64_t own = i < MT_SYS_COUNT ? e->shim[i] - m->shim[i] : 0;
		r->f.kernel_valid[i] &= k->valid[i] && m->k.valid[i];
		r->f.kernel[i] += mt_less_own(k->value[i] - m->k.value[i], own);
	}
	r->f.rusage_minor_faults += (uint64_t)(ru->ru_minflt - m->ru.ru_minflt);
	r->f.rusage_major_faults += (uint64_t)(ru->ru_majflt - m->ru.ru_majflt);
	r->f.user_s += tv_s(ru->ru_utime) - tv_s(m->ru.ru_utime);
	r->f.system_s += tv_s(ru->ru_stime) - tv_s(m->ru.ru_stime);
	/* Large blocks of this call's own, live at once at the most. */
	int64_t large = t->large_peak - m->large_live;
	if (large > 0 && (uint64_t)large > r->f.large_max_live)
		r->f.large_max_live = (uint64_t)large;
}

MT_EXPORT void memtrace_region_begin(const char *name)
{
	if (!name)
		return;
	mt_tls.hidden++;
	struct mt_thread *t = mt_self();
	if (!t->marks)
		t->marks = mt_raw_mmap(MAX_OPEN * sizeof *t->marks);
	if (!t->marks || t->open_regions == MAX_OPEN) {
		mt_warn("regions nested deeper than %d; '%s' is not measured",
			MAX_OPEN, name);
		t->open_regions++; /* so its end matches */
		goto out;
	}
	/* A signal handler's region, begun while its thread is in here: not
	 * measured (waiting would be for ever). */
	int region = -1;
	if (mt_lock_take_unless_mine(&lock)) {
		region = region_index(t, name);
		mt_lock_give(&lock);
	}

	struct mt_region_mark *m = &t->marks[t->open_regions++];
	m->region = region;
	m->outer_region_now = t->region_now;
	m->outer_region_name_now = t->region_name_now;
	if (region >= 0) {
		/* (a region's name, once given an index, stays put) */
		t->region_name_now = regions[region].name;
		t->region_now = (unsigned)region + 1;
	}
	m->outer_large_peak = t->large_peak;
	m->large_live = (int64_t)(t->c.large_allocs - t->c.large_frees);
	t->large_peak = m->large_live;
	take_marks(&m->k, m->shim, &m->ru);
	mt_ksamples_drain(t);
	if (mt_tracing && region >= 0) {
		emit_counters(t, &m->k, m->shim, &m->ru);
		MT_EMIT(region, t, MT_EV_REGION_BEGIN, region, NULL, 0);
	}
	memcpy(&m->c, &t->c, sizeof m->c);
	m->wall_ns = now_ns(); /* last, so the begin's own work is outside */
out:
	mt_tls.hidden--;
}

MT_EXPORT void memtrace_region_end(const char *name)
{
	struct mt_region_end e = {.wall_ns = now_ns()}; /* first, likewise */

	if (!name)
		return;
	mt_tls.hidden++;
	struct mt_thread *t = mt_self();
	if (!t->open_regions) {
		mt_warn("memtrace_region_end(\"%s\") without a begin; ignored", name);
		goto out;
	}
	unsigned depth = --t->open_regions;
	if (depth >= MAX_OPEN || !t->marks)
		goto out;
	struct mt_region_mark *m = &t->marks[depth];
	take_marks(&e.k, e.shim, &e.ru);
	mt_ksamples_drain(t);
	if (mt_tracing && m->region >= 0) {
		MT_EMIT(region, t, MT_EV_REGION_END, m->region, NULL,
			e.wall_ns - m->wall_ns);
		emit_counters(t, &e.k, e.shim, &e.ru);
	}
	if (m->region >= 0 && mt_lock_take_unless_mine(&lock)) {
		struct region *r = &regions[m->region];
		if (strncmp(r->name, name, NAME_LEN - 1) != 0)
			mt_warn("memtrace_region_end(\"%s\") closes region '%s'",
				name, r->name);
		add_call(r, m, t, &e);
		mt_lock_give(&lock);
	}
	t->region_now = m->outer_region_now;
	t->region_name_now = m->outer_region_name_now;
	/* The enclosing region's peak covers this one's. */
	if (m->outer_large_peak > t->large_peak)
		t->large_peak = m->outer_large_peak;
out:
	mt_tls.hidden--;
}

/* The k-th smallest of v[0..n), k < n (Hoare's selection, in place, the
 * middle as pivot).  Not libc's qsort: it allocates from the heap for more
 * than 128 values, at exit, maybe in a signal handler that interrupted
 * malloc. */
static uint64_t kth_smallest(uint64_t *v, size_t n, size_t k)
{
	long lo = 0, hi = (long)n - 1, want = (long)k;
	while (lo < hi) {
		uint64_t pivot = v[lo + (hi - lo) / 2];
		long i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				uint64_t t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		/* v[lo..j] <= pivot <= v[i..hi], and between them the pivot */
		if (want <= j)
			hi = j;
		else if (want >= i)
			lo = i;
		else
			break;
	}
	return v[want];
}

const struct mt_region_summary *mt_regions_summarise(size_t *count)
{
	/* Not locked when this thread holds it already: exit() from a
	 * handler; the call being added then may count in part. */
	bool locked = mt_lock_take_unless_mine(&lock);
	for (int i = 0; i < region_count; i++) {
		struct region *r = &regions[i];
		struct mt_region_summary *s = &summaries[i];
		s->name = r->name;
		s->calls = r->calls;
		s->wall_total_s = (double)r->wall_ns_total / 1e9;
		s->wall_min_s = r->calls ? (double)r->wall_ns_min / 1e9 : 0;
		s->wall_median_s = r->durations_len
					   ? (double)kth_smallest(r->durations,
								  r->durations_len,
								  r->durations_len / 2) / 1e9
					   : 0;
		s->f = r->f;
		if (!r->calls)
			memset(s->f.kernel_valid, 0, sizeof s->f.kernel_valid);
	}
	*count = (size_t)region_count;
	if (locked)
		mt_lock_give(&lock);
	return summaries;
}

void mt_regions_reset_after_fork(void)
{
	lock = 0;
	region_count = 0;
}

MT_EXPORT int memtrace_read_kernel_counters(struct memtrace_kernel_counters *out)
{
	struct mt_ksnapshot k;
	uint64_t shim[MT_SYS_COUNT], v[MT_KERNEL_COUNT];
	struct rusage ru;

	if (!out)
		return -1;
	mt_tls.hidden++;
	struct mt_thread *t = mt_self();
	take_marks(&k, shim, &ru);
	emit_counters(t, &k, shim, &ru);
	for (int i = 0; i < MT_KERNEL_COUNT; i++) {
		/* The shim's own calls since the counters opened, taken out. */
		uint64_t own = i < MT_SYS_COUNT ? mt_kcounters_shim_since_open(i) : 0;
		v[i] = k.valid[i] ? mt_less_own(k.value[i], own) : UINT64_MAX;
	}
	*out = (struct memtrace_kernel_counters){
		v[MT_SYS_BRK], v[MT_SYS_MMAP], v[MT_SYS_MUNMAP], v[MT_SYS_MREMAP],
		v[MT_SYS_MADVISE], v[MT_SYS_MPROTECT], v[MT_KERNEL_MINOR_FAULTS],
		v[MT_KERNEL_MAJOR_FAULTS]};
	mt_tls.hidden--;
	return 0;
}
