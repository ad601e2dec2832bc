#include "block_sizes.h"
#include "counters.h"
#include "rawsys.h"

_Static_assert(MT_BS_MAX_BYTES == MT_LARGE_BYTES,
	       "the slots hold the small blocks' sizes");
_Static_assert(MT_BS_MAX_BYTES >> 3 < MT_BS_ASK_ALWAYS, "a slot holds them");

#define LEAF_BYTES (sizeof(uint16_t) << MT_BS_LEAF_BITS)

bool mt_block_sizes_on;
uint16_t *mt_block_sizes[(size_t)1 << MT_BS_ROOT_BITS];
/* A level could not be mapped: no more tries (each would be a system call
 * on an allocation's path). */
static bool full;

void mt_block_sizes_start(void)
{
	__atomic_store_n(&mt_block_sizes_on, true, __ATOMIC_RELAXED);
}

uint16_t *mt_block_sizes_leaf_make(uintptr_t page)
{
	if (__atomic_load_n(&full, __ATOMIC_RELAXED))
		return NULL;
	uint16_t **at = &mt_block_sizes[page >> MT_BS_LEAF_BITS];
	uint16_t *leaf = mt_raw_mmap(LEAF_BYTES), *none = NULL;
	if (!leaf) {
		__atomic_store_n(&full, true, __ATOMIC_RELAXED);
		return NULL;
	}
	/* (a thread that lost the race gives its leaf back) */
	if (!__atomic_compare_exchange_n(at, &none, leaf, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		mt_raw_munmap(leaf, LEAF_BYTES);
		leaf = none;
	}
	return leaf + (page & (((uintptr_t)1 << MT_BS_LEAF_BITS) - 1));
}
