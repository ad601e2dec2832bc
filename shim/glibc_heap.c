#include <gnu/libc-version.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glibc_heap.h"
#include "rawsys.h"
#include "sites.h"
#include "emit.h"
#include "rss.h"

static const uintptr_t not_glibc;
const uintptr_t *mt_break_watch = &not_glibc;
uintptr_t mt_break_known;
/* glibc's first sbrk asks the kernel for the break (brk(0)) before moving
 * it, when it has never seen it. */
static bool first_move_queries;
/* Where the kernel put the break, while glibc's record of it is still 0
 * (it has not used it): its first move starts there. */
static uintptr_t break_start;

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
			uintptr_t from = old ? old : break_start;
			mt_add(&t->c.sys_inferred[MT_SYS_BRK], calls);
			mt_count_brk_move(&t->c, from, now);
			if (now > from)
				mt_site_credit(MT_SITE_BRK_GROW, now - from);
			else
				mt_site_credit_heap_shrink(MT_MAIN_HEAP,
							   MT_SITE_BRK_SHRINK,
							   from - now);
			MT_EMIT(heap_move, t, from, now, calls);
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
		break;
	case M_TRIM_THRESHOLD:
		g->trim = (uint64_t)value;
		break;
	case M_TOP_PAD:
	case M_MMAP_MAX:
		break;
	default:
		return;
	}
	/* (after GLIBC_TUNABLES was read: no setting undoes it) */
	g->dynamic = false;
	g->by_mallopt = true;
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

void mt_glibc_chunk_freed(struct mt_thread *t, const void *p, size_t head)
{
	/* The mapping starts the chunk's prev_size before it (an aligned
	 * block's offset), and is unmapped whole. */
	const size_t *chunk = (const size_t *)p - 2;
	size_t size = mt_chunk_size(head);
	if (size >= MT_LARGE_BYTES)
		mt_rss_unmapping((char *)(uintptr_t)chunk - chunk[0],
				 chunk[0] + size, true);
	mt_glibc_chunk_mapped(t, head, false);
	chunk_unmapped_by_free(mt_chunk_size(head));
}

void mt_glibc_chunk_mapped(struct mt_thread *t, size_t head, bool allocated)
{
	enum mt_sys sys = allocated ? MT_SYS_MMAP : MT_SYS_MUNMAP;
	mt_count_inferred(&t->c, sys, mt_chunk_size(head));
	mt_site_credit(allocated ? MT_SITE_MMAP : MT_SITE_MUNMAP,
		       mt_chunk_size(head));
	MT_EMIT(chunk_map, t, sys, mt_chunk_size(head));
}

void mt_glibc_chunk_moved(struct mt_thread *t, size_t old_head, const void *p)
{
	bool was_mapped = old_head & MT_CHUNK_MMAPPED;
	size_t head = p ? mt_chunk_head(p) : 0;
	bool is_mapped = head & MT_CHUNK_MMAPPED;

	if (was_mapped && is_mapped) {
		/* glibc mremaps a mapped chunk whose size changes. */
		if (mt_chunk_size(head) != mt_chunk_size(old_head)) {
			mt_count_inferred(&t->c, MT_SYS_MREMAP,
					  mt_chunk_size(head));
			mt_count_remap(&t->c, mt_chunk_size(old_head),
				       mt_chunk_size(head));
			MT_EMIT(chunk_map, t, MT_SYS_MREMAP,
					   mt_chunk_size(head));
			MT_EMIT_EVENT(t, chunk_remap,
				      .from_bytes = mt_chunk_size(old_head),
				      .to_bytes = mt_chunk_size(head));
		}
	} else {
		if (was_mapped)
			mt_glibc_chunk_mapped(t, old_head, false);
		if (is_mapped)
			mt_glibc_chunk_mapped(t, head, true);
	}
}

/* glibc's thread arenas (malloc/arena.c and malloc.c, 2.26 to 2.39, 64-bit).
 * A thread arena's heap is a HEAP_MAX-aligned mapping that starts with
 * its heap_info, whose first word is the arena; the arena (struct
 * malloc_state) lives in its first heap, for good, and keeps the top chunk
 * at byte 96 and system_mem, the bytes its heaps hold, at byte 2184.
 * heap_trim lowers system_mem by what it gives back: by madvise
 * (shrink_heap) or by munmap of a whole heap (delete_heap, which also
 * moves the top chunk to the heap before). */
#define HEAP_MAX ((uintptr_t)64 << 20)
#define ARENA_TOP 96
#define ARENA_SYSTEM_MEM 2184
#define ARENA_MAX_SYSTEM_MEM 2192

/* Set at start when this glibc is one whose layout is the above. */
static bool arenas_readable;

static inline uintptr_t arena_word(const char *arena, size_t at)
{
	return __atomic_load_n((const uintptr_t *)(arena + at), __ATOMIC_RELAXED);
}

/* A chunk's arena, or NULL when its accounts cannot be trusted.  (The
 * chunk's heap is mapped until the chunk is freed; the arena, for good.) */
static const char *arena_of(const void *p)
{
	const char *heap = (const char *)((uintptr_t)p & ~(HEAP_MAX - 1));
	const char *arena = *(const char *const *)heap;
	if (!arena)
		return NULL;
	/* What any arena's accounts hold: a layout that differs fails it,
	 * and then no arena is read again. */
	uintptr_t system_mem = arena_word(arena, ARENA_SYSTEM_MEM);
	if ((system_mem & 4095) != 0 ||
	    system_mem > arena_word(arena, ARENA_MAX_SYSTEM_MEM)) {
		__atomic_store_n(&arenas_readable, false, __ATOMIC_RELAXED);
		return NULL;
	}
	return arena;
}

static uint64_t heaps_deleted, heaps_deleted_bytes;

struct mt_glibc_heaps_deleted mt_glibc_heaps_deleted(void)
{
	return (struct mt_glibc_heaps_deleted){
		__atomic_load_n(&heaps_deleted, __ATOMIC_RELAXED),
		__atomic_load_n(&heaps_deleted_bytes, __ATOMIC_RELAXED)};
}

void mt_glibc_heaps_deleted_reset(void)
{
	heaps_deleted = heaps_deleted_bytes = 0;
}

/* What the shim has accounted of each thread arena's system_mem: the value
 * its watched frees last saw, claimed by compare-and-swap.  Threads that
 * free into one arena at once each see a shrink one of them made (its
 * own free's window, before to after, holds the other's): four consumers
 * freeing producers' buffers counted 227 shrinks where the kernel saw
 * 181 madvise calls (new-user trial 49).  A shrink is counted by
 * the free that first accounts the lower value; a free during whose
 * window another accounted one measures from that value where it is the
 * lower, not from what it read before.  Every watched free that saw a
 * change accounts what it saw after.  (An arena not in the table, full,
 * is watched as before: from its own reading alone.) */
enum { ARENA_SLOTS = 256 };
static struct {
	_Alignas(64) const char *arena; /* (a line each: arenas are threads') */
	uintptr_t accounted;
} arena_slots[ARENA_SLOTS];

static uintptr_t *accounted_of(const char *arena)
{
	unsigned i = (unsigned)(((uintptr_t)arena / HEAP_MAX) % ARENA_SLOTS);
	for (unsigned n = 0; n < ARENA_SLOTS; n++, i = (i + 1) % ARENA_SLOTS) {
		const char *was = __atomic_load_n(&arena_slots[i].arena, __ATOMIC_ACQUIRE);
		if (was == arena)
			return &arena_slots[i].accounted;
		if (!was && __atomic_compare_exchange_n(&arena_slots[i].arena, &was,
							arena, false, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
			return &arena_slots[i].accounted;
		/* (the slot another thread just took, for the same arena) */
		if (was == arena)
			return &arena_slots[i].accounted;
	}
	return NULL;
}

/* The bytes a watched free shrank the arena by, claimed: `held` and
 * `now` its system_mem before and after, `before` the accounted value
 * before it (accounted_of). */
static uintptr_t shrink_claimed(uintptr_t *accounted, uintptr_t before,
				uintptr_t held, uintptr_t now)
{
	if (!accounted)
		return now < held ? held - now : 0;
	uintptr_t seen = __atomic_load_n(accounted, __ATOMIC_ACQUIRE);
	/* (nothing moved in its window, nothing accounted meanwhile: nothing
	 * to claim, and no write to the arena's line, which its threads
	 * share) */
	if (now == held && seen == before)
		return 0;
	for (;;) {
		/* (never above what it read before: a value another free
		 * saw before a trim may be claimed after it) */
		uintptr_t base = seen != before && seen < held ? seen : held;
		if (__atomic_compare_exchange_n(accounted, &seen, now, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return now < base ? base - now : 0;
	}
}

void mt_glibc_free_trimming(struct mt_thread *t, void *p,
			    void (*real_free)(void *))
{
	const char *arena = NULL;
	if (mt_thread_arena_watched(mt_chunk_head(p)) &&
	    __atomic_load_n(&arenas_readable, __ATOMIC_RELAXED))
		arena = arena_of(p);
	if (!arena) {
		real_free(p);
		if (mt_break_moved())
			mt_glibc_break_moved(t);
		else if (mt_tls.site)
			mt_site_freed_in_arena(MT_MAIN_HEAP);
		return;
	}
	if (t->freed_arena != arena) {
		t->freed_arena = arena;
		t->freed_arena_accounted = accounted_of(arena);
	}
	uintptr_t *accounted = t->freed_arena_accounted;
	uintptr_t before = accounted ? __atomic_load_n(accounted, __ATOMIC_ACQUIRE) : 0;
	uintptr_t held = arena_word(arena, ARENA_SYSTEM_MEM);
	uintptr_t top_heap = arena_word(arena, ARENA_TOP) & ~(HEAP_MAX - 1);
	real_free(p);
	uintptr_t now = arena_word(arena, ARENA_SYSTEM_MEM);
	/* (Another thread of the same arena may have grown it meanwhile:
	 * then less is seen, never more.) */
	uintptr_t shrunk = shrink_claimed(accounted, before, held, now);
	if (!shrunk) {
		if (mt_tls.site) /* (a large block's free: its site's) */
			mt_site_freed_in_arena(arena);
		return;
	}
	bool deleted = (arena_word(arena, ARENA_TOP) & ~(HEAP_MAX - 1)) != top_heap;
	enum mt_sys sys = deleted ? MT_SYS_MUNMAP : MT_SYS_MADVISE;
	mt_count_inferred(&t->c, sys, shrunk);
	if (deleted) {
		__atomic_fetch_add(&heaps_deleted, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&heaps_deleted_bytes, shrunk, __ATOMIC_RELAXED);
		mt_site_credit(MT_SITE_MUNMAP, shrunk);
	}
	else
		mt_site_credit_heap_shrink(arena, MT_SITE_THREAD_HEAP_SHRINK,
					   shrunk);
	MT_EMIT(chunk_map, t, sys, shrunk);
}

/* The versions whose malloc_state and heap_info have the layout above;
 * glibc.malloc.hugetlb=2 changes the heaps' alignment. */
static bool arena_layout_known(void)
{
	unsigned major = 0, minor = 0;
	const char *tunables = getenv("GLIBC_TUNABLES");
	if (sizeof(void *) != 8 ||
	    sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) != 2)
		return false;
	if (tunables && strstr(tunables, "glibc.malloc.hugetlb=") &&
	    !strstr(tunables, "glibc.malloc.hugetlb=0") &&
	    !strstr(tunables, "glibc.malloc.hugetlb=1"))
		return false;
	return major == 2 && minor >= 26 && minor <= 39;
}

void mt_glibc_heap_init(const uintptr_t *curbrk)
{
	if (!curbrk)
		return;
	read_fixed_thresholds();
	/* (glibc's record, 0 where it has not used the break yet: the
	 * shim's start-up makes no allocation from the heap, and a free
	 * seen before the program's first malloc read the 0 as a move of
	 * the whole break, back and forth; new-user trial 27) */
	uintptr_t now = *curbrk;
	if (!now) {
		break_start = mt_raw_brk_query();
		first_move_queries = true;
	}
	__atomic_store_n(&mt_break_known, now, __ATOMIC_RELAXED);
	mt_break_watch = curbrk;
	arenas_readable = arena_layout_known();
}
