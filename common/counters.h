/* Counting-mode figures: one block per thread, written only by its owner,
 * summed when a summary is made.  The increments are relaxed atomic loads and
 * stores, which compile to plain moves: the owner never contends, and a
 * reader summing at exit sees whole 64-bit values, not torn ones. */
#ifndef MEMTRACE_COUNTERS_H
#define MEMTRACE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "memtrace/events.h"

struct mt_counters {
	uint64_t calls[MT_CALL_COUNT];
	uint64_t requested[MT_CALL_COUNT]; /* bytes asked for, per entry */
	uint64_t size_hist[MT_SIZE_BUCKETS];
	uint64_t allocated;		   /* usable bytes handed out */
	uint64_t freed;			   /* usable bytes given back */
	uint64_t sys[MT_SYS_COUNT];
	uint64_t sys_bytes[MT_SYS_COUNT];
	/* The part of calls[] and sys[] made from inside a malloc-API call:
	 * the allocator's own, not the program's. */
	uint64_t calls_by_allocator[MT_CALL_COUNT];
	uint64_t sys_by_allocator[MT_SYS_COUNT];
	/* Made by glibc's malloc out of sight, inferred from what changed (the
	 * break, mmapped chunk headers); not part of sys[]. */
	uint64_t sys_inferred[MT_SYS_COUNT];
	uint64_t sys_inferred_bytes[MT_SYS_COUNT];
	uint64_t brk_grow, brk_grow_bytes;
	uint64_t brk_shrink, brk_shrink_bytes;
	uint64_t madvise_by_advice[MT_ADVICE_SLOTS];
	uint64_t madvise_bytes_by_advice[MT_ADVICE_SLOTS];
	/* Blocks of at least MT_LARGE_BYTES, where allocators change policy
	 * (glibc's default mmap threshold). */
	uint64_t large_allocs, large_bytes, large_frees;
	/* The part of sys_bytes[] the allocator's own calls asked for (1.9;
	 * last, so that an older trace's baseline is a prefix). */
	uint64_t sys_bytes_by_allocator[MT_SYS_COUNT];
	/* reallocs that moved the block, and the bytes the allocator copied
	 * for them (not for glibc's mapped chunks, which mremap moves
	 * without a copy) (1.10; last, as above) */
	uint64_t realloc_moves, realloc_copied_bytes;
	/* the usable bytes of the large blocks freed (1.12; last, as above) */
	uint64_t large_freed_bytes;
	/* Of the anonymous mappings of MT_LARGE_BYTES or more unmapped (a
	 * munmap seen, or glibc's free of a mapped chunk), the bytes the
	 * process had touched (resident just before), and the part of those
	 * in transparent huge pages (each one fault of 2 MiB): all, then the
	 * allocator's (1.13; last, as above) */
	uint64_t unmapped_touched, unmapped_touched_huge;
	uint64_t unmapped_touched_by_allocator, unmapped_touched_huge_by_allocator;
	/* glibc's mapped chunks resized in place by realloc (its mremap):
	 * how many grew, taking fresh pages, and shrank, giving pages back to
	 * the kernel, and by how many bytes (1.15; last, as above) */
	uint64_t remap_grow, remap_grow_bytes, remap_shrink, remap_shrink_bytes;
	/* The program's own calls of malloc_trim, and those of them that
	 * moved the break back, by how many bytes, and those that gave other
	 * resident memory back (free pages inside the heaps, madvised away
	 * by glibc out of sight: measured as the resident bytes the call
	 * took away), by how many bytes: trims the trim threshold does not
	 * decide (1.16; last, as above) */
	uint64_t trim_calls, trim_shrinks, trim_shrink_bytes;
	uint64_t trim_purges, trim_purged_bytes;
	/* The allocator's purges (madvise MADV_DONTNEED or MADV_FREE) made
	 * inside a calloc of a large block, and their bytes: jemalloc zeroes
	 * a block it reuses that way, which no decay setting stops (1.17;
	 * last, as above) */
	uint64_t calloc_purges, calloc_purged_bytes;
	/* What the purges (madvise MADV_DONTNEED or MADV_FREE) of 128 KiB or
	 * more held, as unmapped_touched (1.18; last, as above) */
	uint64_t purged_touched, purged_touched_huge;
	uint64_t purged_touched_by_allocator, purged_touched_huge_by_allocator;
	/* The program's own purges of memory it had purged before, and the
	 * bytes purged again (shim/own_purges.h) (1.18; last, as above) */
	uint64_t own_purges_again, own_purged_again_bytes;
};

#define MT_LARGE_BYTES (128 * 1024)

/* slot += n, in one instruction: only the owning thread writes a slot
 * (others may read it at any time, so it is stored whole), and a signal
 * handler that counts on the same thread runs before or after it, never
 * between a load and a store that would overwrite its count. */
static inline void mt_bump(uint64_t *slot, uint64_t n)
{
#if defined(__x86_64__)
	__asm__("addq %1, %0" : "+m"(*slot) : "er"(n));
#else
	__atomic_add_fetch(slot, n, __ATOMIC_RELAXED);
#endif
}

/* A kernel counter's change less the shim's own calls in it, never below
 * zero: the two are read one after the other, and a call the shim's
 * writer thread makes between the reads is in one and not the other (a
 * region said 18446744073709551615 mmap calls, and its summary could not
 * be read back). */
static inline uint64_t mt_less_own(uint64_t change, uint64_t own)
{
	return change > own ? change - own : 0;
}

/* The same, and the new value (which may include a count a signal handler
 * made meanwhile: right too).  A load-add-store here lost a handler's
 * malloc from the bytes allocated (tests/integration/test_hostile.py). */
static inline uint64_t mt_add(uint64_t *slot, uint64_t n)
{
	mt_bump(slot, n);
	return __atomic_load_n(slot, __ATOMIC_RELAXED);
}

static inline unsigned mt_size_bucket(size_t n)
{
	return n ? 64 - (unsigned)__builtin_clzll(n) : 0;
}

static inline unsigned mt_advice_slot(int advice)
{
	return advice >= 0 && advice < MT_ADVICE_SLOTS - 1
		       ? (unsigned)advice
		       : MT_ADVICE_SLOTS - 1;
}

/* An allocation entry returned a block of `usable` bytes for a request of
 * `requested`.  Returns the bytes allocated so far. */
static inline uint64_t mt_count_alloc(struct mt_counters *c, enum mt_call call,
				      size_t requested, size_t usable)
{
	mt_bump(&c->calls[call], 1);
	mt_bump(&c->requested[call], requested);
	mt_bump(&c->size_hist[mt_size_bucket(requested)], 1);
	return mt_add(&c->allocated, usable);
}

/* A realloc moved its block, copying `copied` bytes. */
static inline void mt_count_realloc_move(struct mt_counters *c, uint64_t copied)
{
	mt_bump(&c->realloc_moves, 1);
	mt_bump(&c->realloc_copied_bytes, copied);
}

static inline void mt_count_call(struct mt_counters *c, enum mt_call call)
{
	mt_bump(&c->calls[call], 1);
}

static inline void mt_count_free(struct mt_counters *c, size_t usable)
{
	mt_bump(&c->freed, usable);
}

static inline void mt_count_sys(struct mt_counters *c, enum mt_sys sys,
				uint64_t bytes, bool by_allocator)
{
	mt_add(&c->sys[sys], 1);
	mt_add(&c->sys_bytes[sys], bytes);
	if (by_allocator) {
		mt_add(&c->sys_by_allocator[sys], 1);
		mt_add(&c->sys_bytes_by_allocator[sys], bytes);
	}
}

/* A call of a memory-syscall entry point (mmap, sbrk, syscall, ...). */
static inline void mt_count_sys_entry(struct mt_counters *c,
				      enum mt_call call, bool by_allocator)
{
	mt_add(&c->calls[call], 1);
	if (by_allocator)
		mt_add(&c->calls_by_allocator[call], 1);
}

static inline void mt_count_madvise(struct mt_counters *c, int advice,
				    uint64_t bytes, bool by_allocator)
{
	mt_count_sys(c, MT_SYS_MADVISE, bytes, by_allocator);
	mt_add(&c->madvise_by_advice[mt_advice_slot(advice)], 1);
	mt_add(&c->madvise_bytes_by_advice[mt_advice_slot(advice)], bytes);
}

/* A system call glibc's malloc made out of sight, inferred from what
 * changed: a chunk mapped, unmapped or remapped, or a thread arena's heap
 * shrunk (madvise MADV_DONTNEED, glibc's shrink_heap). */
static inline void mt_count_inferred(struct mt_counters *c, enum mt_sys sys,
				     uint64_t bytes)
{
	mt_add(&c->sys_inferred[sys], 1);
	mt_add(&c->sys_inferred_bytes[sys], bytes);
	if (sys == MT_SYS_MADVISE) {
		unsigned dontneed = mt_advice_slot(MADV_DONTNEED);
		mt_add(&c->madvise_by_advice[dontneed], 1);
		mt_add(&c->madvise_bytes_by_advice[dontneed], bytes);
	}
}

/* Memory given back of `touched` resident anonymous bytes, `huge` of
 * them in transparent huge pages, into the four slots of its kind: all,
 * and the allocator's. */
static inline void mt_count_touched(uint64_t *all, uint64_t *all_huge,
				    uint64_t *mine, uint64_t *mine_huge,
				    uint64_t touched, uint64_t huge,
				    bool by_allocator)
{
	mt_add(all, touched);
	mt_add(all_huge, huge);
	if (by_allocator) {
		mt_add(mine, touched);
		mt_add(mine_huge, huge);
	}
}

/* An unmapping of such memory. */
static inline void mt_count_unmap_touched(struct mt_counters *c,
					  uint64_t touched, uint64_t huge,
					  bool by_allocator)
{
	mt_count_touched(&c->unmapped_touched, &c->unmapped_touched_huge,
			 &c->unmapped_touched_by_allocator,
			 &c->unmapped_touched_huge_by_allocator, touched, huge,
			 by_allocator);
}

/* A purge (madvise MADV_DONTNEED or MADV_FREE) of such memory. */
static inline void mt_count_purge_touched(struct mt_counters *c,
					  uint64_t touched, uint64_t huge,
					  bool by_allocator)
{
	mt_count_touched(&c->purged_touched, &c->purged_touched_huge,
			 &c->purged_touched_by_allocator,
			 &c->purged_touched_huge_by_allocator, touched, huge,
			 by_allocator);
}

/* A purge of the program's own that fell on `bytes` it had purged
 * before. */
static inline void mt_count_own_purge_again(struct mt_counters *c,
					    uint64_t bytes)
{
	mt_add(&c->own_purges_again, 1);
	mt_add(&c->own_purged_again_bytes, bytes);
}

/* A mapped chunk remapped from `from` bytes to `to`. */
static inline void mt_count_remap(struct mt_counters *c, uint64_t from,
				  uint64_t to)
{
	if (to > from) {
		mt_add(&c->remap_grow, 1);
		mt_add(&c->remap_grow_bytes, to - from);
	} else if (to < from) {
		mt_add(&c->remap_shrink, 1);
		mt_add(&c->remap_shrink_bytes, from - to);
	}
}

/* The program called malloc_trim, which moved the break back by
 * `shrink_bytes` and gave `purged_bytes` more back (0: it did not). */
static inline void mt_count_malloc_trim(struct mt_counters *c,
					uint64_t shrink_bytes,
					uint64_t purged_bytes)
{
	mt_add(&c->trim_calls, 1);
	if (shrink_bytes) {
		mt_add(&c->trim_shrinks, 1);
		mt_add(&c->trim_shrink_bytes, shrink_bytes);
	}
	if (purged_bytes) {
		mt_add(&c->trim_purges, 1);
		mt_add(&c->trim_purged_bytes, purged_bytes);
	}
}

static inline void mt_count_calloc_purges(struct mt_counters *c, uint64_t n,
					  uint64_t bytes)
{
	mt_add(&c->calloc_purges, n);
	mt_add(&c->calloc_purged_bytes, bytes);
}

/* A brk that moved the program break from `from` to `to`. */
static inline void mt_count_brk_move(struct mt_counters *c, uintptr_t from,
				     uintptr_t to)
{
	if (to > from) {
		mt_add(&c->brk_grow, 1);
		mt_add(&c->brk_grow_bytes, to - from);
	} else if (to < from) {
		mt_add(&c->brk_shrink, 1);
		mt_add(&c->brk_shrink_bytes, from - to);
	}
}

/* dst += src, field by field (src may be written concurrently). */
void mt_counters_add(struct mt_counters *dst, const struct mt_counters *src);

#endif
