/* The usable sizes of small blocks, by the 4 KiB page each starts in, on
 * an allocator whose pages hold blocks of one size only: tcmalloc's spans
 * (8 KiB pages), jemalloc's slabs and large extents (4 KiB pages) and
 * mimalloc's pages (64 KiB slices and up); a page of the map is never
 * larger than one of theirs.  While a block is live its page cannot change
 * size class, so the size the shim saw at its allocation is the size of
 * every live block that starts in that page.  Written when the shim sees a
 * block allocated (a compare, and a store only when the page changed
 * class), read when it is freed: free costs no call to the allocator's
 * lookup (malloc_usable_size: its page map, ~37 instructions and a call on
 * tcmalloc; jemalloc's own counts of a thread's bytes, read around each
 * call, came to 1.3-2.2 ns a pair more than this map).
 *
 * A slot holds usable/8, or 0: not known, ask the allocator (large blocks,
 * pages no block was seen allocated in).  A page that held an aligned
 * block stays "ask" for good: mimalloc gives an aligned block an interior
 * address whose usable size is less than its page's size.
 *
 * Two levels: a root of 2^16 leaves (512 KiB of the shim's zeroed data,
 * touched where used), a leaf of 2^19 pages (1 MiB, 2 GiB of addresses)
 * mapped on first use.  When a leaf cannot be mapped (a tight RLIMIT_AS)
 * the map stops growing, and those sizes are asked. */
#ifndef MEMTRACE_BLOCK_SIZES_H
#define MEMTRACE_BLOCK_SIZES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

#define MT_BS_PAGE_SHIFT 12
#define MT_BS_LEAF_BITS 19
#define MT_BS_ROOT_BITS (47 - MT_BS_PAGE_SHIFT - MT_BS_LEAF_BITS)
#define MT_BS_ASK_ALWAYS UINT16_MAX
/* Large blocks' sizes are asked for: the shim follows each of those. */
#define MT_BS_MAX_BYTES ((size_t)1 << 17)

/* Whether the allocator is known to be one of those above. */
extern MT_HIDDEN bool mt_block_sizes_on;
/* The root: in the shim's zeroed data, so its check is one load. */
extern MT_HIDDEN uint16_t *mt_block_sizes[(size_t)1 << MT_BS_ROOT_BITS];

/* Called once the allocator is known to keep one size a page. */
void mt_block_sizes_start(void);
/* The slot of page's leaf, mapped; NULL if it could not be. */
uint16_t *mt_block_sizes_leaf_make(uintptr_t page);

/* The slot of the page p starts in; NULL if its leaf is not mapped (and
 * `make`: could not be). */
static inline uint16_t *mt_block_size_slot(const void *p, bool make)
{
	uintptr_t page = (uintptr_t)p >> MT_BS_PAGE_SHIFT;
	uintptr_t root = page >> MT_BS_LEAF_BITS;
	if (__builtin_expect(root >> MT_BS_ROOT_BITS, 0))
		return NULL;
	uint16_t *leaf = __atomic_load_n(&mt_block_sizes[root], __ATOMIC_ACQUIRE);
	if (__builtin_expect(!leaf, 0))
		return make ? mt_block_sizes_leaf_make(page) : NULL;
	return leaf + (page & (((uintptr_t)1 << MT_BS_LEAF_BITS) - 1));
}

/* The slot's new value, unless the page is "ask" for good.  Racing
 * threads write the same value: a page has one size. */
static inline void mt_block_size_set(uint16_t *slot, uint16_t now)
{
	uint16_t was = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (__builtin_expect(was != now && was != MT_BS_ASK_ALWAYS, 0))
		__atomic_store_n(slot, now, __ATOMIC_RELAXED);
}

/* A small block p (not NULL) of `usable` bytes, a multiple of 8, came from
 * malloc, on such an allocator (its size class is known: see
 * size_classes.h). */
static inline void mt_block_size_put_small(const void *p, size_t usable)
{
	uint16_t *slot = mt_block_size_slot(p, true);
	if (__builtin_expect(slot != NULL, 1))
		mt_block_size_set(slot, (uint16_t)(usable >> 3));
}

/* A block p of `usable` bytes was allocated (`aligned`: by the aligned
 * family). */
static inline void mt_block_size_put(const void *p, size_t usable, bool aligned)
{
	if (!mt_block_sizes_on || !p)
		return;
	uint16_t *slot = mt_block_size_slot(p, true);
	if (slot)
		mt_block_size_set(slot,
				  aligned ? MT_BS_ASK_ALWAYS
				  : usable < MT_BS_MAX_BYTES && !(usable & 7)
					  ? (uint16_t)(usable >> 3)
					  : 0);
}

/* The usable size of the live block p, 0 when the allocator must be
 * asked. */
static inline size_t mt_block_size_get(const void *p)
{
	uint16_t *slot = mt_block_size_slot(p, false);
	uint16_t v = slot ? __atomic_load_n(slot, __ATOMIC_RELAXED) : 0;
	return v == MT_BS_ASK_ALWAYS ? 0 : (size_t)v << 3;
}

#endif
