/* An allocator's size classes, computed without a lookup: the usable size
 * malloc(n) gets is its size class, which tcmalloc (nallocx) and mimalloc
 * (mi_good_size) compute from n alone, where malloc_usable_size(p) looks
 * the block up (its page map: some 30 instructions a call on tcmalloc).
 * Below 4 KiB the classes are kept in a table by 8-byte steps (every class
 * is a multiple of 8, so all sizes of a step share one). */
#ifndef MEMTRACE_SIZE_CLASSES_H
#define MEMTRACE_SIZE_CLASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "visibility.h"

#define MT_SIZE_TABLE_MAX 4096

/* The allocator's function, NULL when it has none that is exact. */
extern MT_HIDDEN size_t (*mt_good_size)(size_t);
extern MT_HIDDEN uint32_t mt_size_table[MT_SIZE_TABLE_MAX / 8 + 1];

/* Whether the allocator resolved as malloc has such a function; called
 * once, after the symbols are resolved. */
bool mt_size_classes_probe(void);
size_t mt_size_class_fill(size_t step, void *p);

/* The usable size of p, malloc(n)'s block, for n below MT_LARGE_BYTES;
 * 0 when not known.  A step of the table is filled from the first block
 * of its sizes, checked against the allocator's lookup: a class function
 * found wrong once is not used again. */
static inline size_t mt_size_class(size_t n, void *p)
{
	if (__builtin_expect(n <= MT_SIZE_TABLE_MAX, 1)) {
		size_t step = (n + 7) >> 3;
		uint32_t u = __atomic_load_n(&mt_size_table[step], __ATOMIC_RELAXED);
		return u ? u : mt_size_class_fill(step, p);
	}
	size_t (*good)(size_t) = __atomic_load_n(&mt_good_size, __ATOMIC_RELAXED);
	return good ? good(n) : 0;
}

#endif
