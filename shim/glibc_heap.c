#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "glibc_heap.h"
#include "rawsys.h"
#include "trace.h"

static const uintptr_t not_glibc;
const uintptr_t *mt_break_watch = &not_glibc;
uintptr_t mt_break_known;
/* glibc's first sbrk asks the kernel for the break (brk(0)) before moving
 * it, when it has never seen it. */
static bool first_move_queries;

void mt_glibc_break_moved(struct mt_thread *t)
{
	uintptr_t now = *mt_break_watch;
	uintptr_t old = __atomic_load_n(&mt_break_known, __ATOMIC_RELAXED);

	/* Threads that see the same move: the one that swaps it in counts. */
	while (old != now) {
		if (__atomic_compare_exchange_n(&mt_break_known, &old, now, false,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			unsigned calls = 1;
			if (first_move_queries) {
				first_move_queries = false;
				calls = 2;
			}
			mt_add(&t->c.sys_inferred[MT_SYS_BRK], calls);
			mt_count_brk_move(&t->c, old, now);
			if (mt_tracing)
				mt_trace_heap_move(t, old, now, calls);
			return;
		}
	}
}

void mt_glibc_break_set(uintptr_t to)
{
	if (mt_break_watch != &not_glibc)
		__atomic_store_n(&mt_break_known, to, __ATOMIC_RELAXED);
}

/* glibc's thresholds, followed the way glibc moves them: freeing a mapped
 * chunk larger than the mmap threshold (and at most 32 MiB) raises the
 * mmap threshold to its size and the trim threshold to twice that, unless
 * a setting fixed them (then glibc never moves them). */
#define DEFAULT_THRESHOLD (128 * 1024)
#define THRESHOLD_MAX (32u << 20)

struct mt_glibc_thresholds mt_glibc_thresholds = {
	.mmap = DEFAULT_THRESHOLD,
	.trim = DEFAULT_THRESHOLD,
	.dynamic = true,
};

/* glibc's default fastbin limit (M_MXFAST of 128 request bytes) as a
 * chunk size, and the chunk size a given M_MXFAST makes it (glibc's
 * set_max_fast: below 8, no chunk at all). */
size_t mt_glibc_no_trim_below = 128;

static void fastbin_limit_set(unsigned long request)
{
	size_t chunk = request < 8 ? 0 : (request + 8) & ~(size_t)15;
	/* Only ever lowered: a raise is conservative to ignore. */
	if (chunk < __atomic_load_n(&mt_glibc_no_trim_below, __ATOMIC_RELAXED))
		__atomic_store_n(&mt_glibc_no_trim_below, chunk, __ATOMIC_RELAXED);
}

/* A setting fixes the thresholds: GLIBC_TUNABLES=glibc.malloc.X=N or the
 * older MALLOC_X_ variables (which glibc still reads). */
static void read_fixed_thresholds(void)
{
	static const char *const tunables[] = {
		"glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold",
		"glibc.malloc.top_pad", "glibc.malloc.mmap_max"};
	static const char *const vars[] = {
		"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
		"MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"};
	const char *t = getenv("GLIBC_TUNABLES");
	struct mt_glibc_thresholds *g = &mt_glibc_thresholds;
	const char *mxfast = t ? strstr(t, "glibc.malloc.mxfast=") : NULL;

	if (mxfast)
		fastbin_limit_set(strtoul(strchr(mxfast, '=') + 1, NULL, 0));

	for (size_t i = 0; i < 4; i++) {
		const char *at = t ? strstr(t, tunables[i]) : NULL;
		const char *value = at ? strchr(at, '=') : getenv(vars[i]);
		if (!value)
			continue;
		if (*value == '=')
			value++;
		g->dynamic = false;
		if (i == 0)
			g->mmap = strtoull(value, NULL, 0);
		else if (i == 1)
			g->trim = strtoull(value, NULL, 0);
	}
}

void mt_glibc_mallopt(int param, int value)
{
	/* Lowered before glibc takes it, so no free in between is missed. */
	if (param == M_MXFAST && value >= 0)
		fastbin_limit_set((unsigned long)value);
}

void mt_glibc_mallopt_done(int param, int value, int result)
{
	struct mt_glibc_thresholds *g = &mt_glibc_thresholds;

	if (result != 1)
		return;
	switch (param) {
	case M_MMAP_THRESHOLD:
		g->mmap = (uint64_t)value;
		g->dynamic = false;
		break;
	case M_TRIM_THRESHOLD:
		g->trim = (uint64_t)value;
		g->dynamic = false;
		break;
	case M_TOP_PAD:
	case M_MMAP_MAX:
		g->dynamic = false;
		break;
	}
}

static void chunk_unmapped_by_free(size_t size)
{
	struct mt_glibc_thresholds *g = &mt_glibc_thresholds;
	if (!g->dynamic || size <= g->mmap || size > THRESHOLD_MAX)
		return;
	g->mmap = size;
	g->trim = 2 * size;
	g->raises++;
}

void mt_glibc_chunk_freed(struct mt_thread *t, size_t head)
{
	mt_glibc_chunk_mapped(t, head, false);
	chunk_unmapped_by_free(mt_chunk_size(head));
}

void mt_glibc_chunk_mapped(struct mt_thread *t, size_t head, bool allocated)
{
	enum mt_sys sys = allocated ? MT_SYS_MMAP : MT_SYS_MUNMAP;
	mt_add(&t->c.sys_inferred[sys], 1);
	mt_add(&t->c.sys_inferred_bytes[sys], mt_chunk_size(head));
	if (mt_tracing)
		mt_trace_chunk_map(t, sys, mt_chunk_size(head));
}

void mt_glibc_chunk_moved(struct mt_thread *t, size_t old_head, const void *p)
{
	bool was_mapped = old_head & MT_CHUNK_MMAPPED;
	size_t head = p ? mt_chunk_head(p) : 0;
	bool is_mapped = head & MT_CHUNK_MMAPPED;

	if (was_mapped && is_mapped) {
		/* glibc mremaps a mapped chunk whose size changes. */
		if (mt_chunk_size(head) != mt_chunk_size(old_head)) {
			mt_add(&t->c.sys_inferred[MT_SYS_MREMAP], 1);
			mt_add(&t->c.sys_inferred_bytes[MT_SYS_MREMAP],
			       mt_chunk_size(head));
			if (mt_tracing)
				mt_trace_chunk_map(t, MT_SYS_MREMAP,
						   mt_chunk_size(head));
		}
	} else {
		if (was_mapped)
			mt_glibc_chunk_mapped(t, old_head, false);
		if (is_mapped)
			mt_glibc_chunk_mapped(t, head, true);
	}
}

void mt_glibc_heap_init(const uintptr_t *curbrk)
{
	if (!curbrk)
		return;
	read_fixed_thresholds();
	uintptr_t now = *curbrk;
	if (!now) {
		now = mt_raw_brk_query();
		first_move_queries = true;
	}
	__atomic_store_n(&mt_break_known, now, __ATOMIC_RELAXED);
	mt_break_watch = curbrk;
}
