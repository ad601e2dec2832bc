/* What glibc's malloc does out of the interposers' sight: it moves the
 * program break (brk) and maps large chunks (mmap, munmap, mremap) with
 * internal calls.  Both leave traces we can read cheaply: the break is
 * glibc's __curbrk, and a chunk's header says whether it was mmapped.  They
 * give the direction and size of every heap move, and, when the kernel
 * counters are off, the counts themselves ("inferred"). */
#ifndef MEMTRACE_GLIBC_HEAP_H
#define MEMTRACE_GLIBC_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thread.h"
#include "visibility.h"

/* glibc's chunk header: size with flag bits; IS_MMAPPED is bit 1,
 * NON_MAIN_ARENA (a chunk of a thread arena's heap) bit 2. */
#define MT_CHUNK_MMAPPED 2
#define MT_CHUNK_NON_MAIN_ARENA 4

static inline size_t mt_chunk_head(const void *p)
{
	return ((const size_t *)p)[-1];
}

/* Usable bytes of a chunk, as glibc's malloc_usable_size computes them. */
static inline size_t mt_chunk_usable(size_t head)
{
	return (head & ~(size_t)7) - (head & MT_CHUNK_MMAPPED ? 16 : 8);
}

static inline size_t mt_chunk_size(size_t head)
{
	return head & ~(size_t)7;
}

/* Where the break is read (glibc's __curbrk, or a constant zero when the
 * backend is not glibc) and the last value accounted for. */
extern MT_HIDDEN const uintptr_t *mt_break_watch;
extern MT_HIDDEN uintptr_t mt_break_known;

static inline bool mt_break_moved(void)
{
	return *mt_break_watch != __atomic_load_n(&mt_break_known, __ATOMIC_RELAXED);
}

/* glibc puts a freed chunk of at most this many bytes (its fastbin limit)
 * in the thread's tcache or a fastbin, neither of which merges with the top
 * of the heap or trims it: freeing such a chunk cannot move the break, so
 * its free needs no look at the break after (with a trace; free() looks
 * all the same: interpose.c).  128 by default; a setting
 * (M_MXFAST, glibc.malloc.mxfast) may only lower it here. */
extern MT_HIDDEN size_t mt_glibc_no_trim_below;

static inline bool mt_free_may_trim(size_t head)
{
	return mt_chunk_size(head) > mt_glibc_no_trim_below;
}

/* Which frees of a thread arena's chunks are watched for a shrink of its
 * heap: a chunk the tcache cannot take (above 1032 bytes, glibc's
 * default tcache_max) always reaches _int_free, which trims when what it
 * merged into the top is large.  A smaller one trims only when its tcache
 * bin is full and it merges into the top: not watched, since every free of
 * such a chunk would pay for the look (1.5 to 2 ns); such shrinks are in
 * the kernel's madvise count and in no inferred one. */
#define MT_THREAD_TRIM_WATCHED 1040

static inline bool mt_thread_arena_watched(size_t head)
{
	return (head & MT_CHUNK_NON_MAIN_ARENA) &&
	       mt_chunk_size(head) >= MT_THREAD_TRIM_WATCHED;
}

/* free(p) of a chunk from a heap (not mapped) whose free may trim it, and
 * what the trim gave back: the main heap's moves the break; a thread
 * arena's heap shrinks with madvise, or goes with munmap, out of sight
 * (glibc's heap_trim), which the arena's own accounts show. */
void mt_glibc_free_trimming(struct mt_thread *t, void *p,
			    void (*real_free)(void *));

/* The thread arenas' heaps free() deleted whole (munmap: heap_trim's
 * delete_heap, which no trim threshold stops), as seen, and their bytes;
 * a free that deleted several counts once. */
struct mt_glibc_heaps_deleted {
	uint64_t count, bytes;
};
struct mt_glibc_heaps_deleted mt_glibc_heaps_deleted(void);
/* In a child after fork: from zero. */
void mt_glibc_heaps_deleted_reset(void);

/* The program called mallopt(param, value); before the call. */
void mt_glibc_mallopt(int param, int value);
/* The same after it, with its result (1: taken). */
void mt_glibc_mallopt_done(int param, int value, int result);

/* Start watching (glibc backend only). */
void mt_glibc_heap_init(const uintptr_t *curbrk);
/* Account for the break's move(s) since last seen; t is the thread that saw
 * it. */
void mt_glibc_break_moved(struct mt_thread *t);
/* The interposed brk/sbrk moved the break to `to` themselves. */
void mt_glibc_break_set(uintptr_t to);
/* glibc's mmap and trim thresholds as they stand, followed from the mapped
 * chunks freed (glibc raises both on such a free). */
struct mt_glibc_thresholds {
	uint64_t mmap, trim;
	uint64_t raises;
	bool dynamic; /* false when a setting fixed them */
	bool by_mallopt; /* the program's own mallopt call did */
};
extern MT_HIDDEN struct mt_glibc_thresholds mt_glibc_thresholds;

/* free() is about to give back the mapped chunk of block p, with header
 * `head`. */
void mt_glibc_chunk_freed(struct mt_thread *t, const void *p, size_t head);
/* A chunk with header `head` was mapped (allocated) or unmapped (freed). */
void mt_glibc_chunk_mapped(struct mt_thread *t, size_t head, bool allocated);
/* realloc turned a chunk with header old_head into p (NULL: freed). */
void mt_glibc_chunk_moved(struct mt_thread *t, size_t old_head, const void *p);

#endif
