/* An allocator's size classes, computed without a lookup: the usable size
 * malloc(n) gets is its size class, which tcmalloc (nallocx) and mimalloc
 * (mi_good_size) compute from n alone, where malloc_usable_size(p) looks
 * the block up (its page map: some 30 instructions a call on tcmalloc).
 * Below MT_LARGE_BYTES the classes are kept in a table by steps: of 8
 * bytes up to 4 KiB, of 512 above (tcmalloc's classes there are multiples
 * of 512, mimalloc's of 1024).  A step is filled only if its first and
 * last sizes share a class (then all between do: the class of n grows
 * with n), and the first block of its sizes has that usable size. */
#ifndef MEMTRACE_SIZE_CLASSES_H
#define MEMTRACE_SIZE_CLASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "visibility.h"

#define MT_SIZE_FINE_MAX 4096
#define MT_SIZE_STEPS (MT_SIZE_FINE_MAX / 8 + 1 + (MT_LARGE_BYTES - MT_SIZE_FINE_MAX) / 512)

/* The allocator's function, NULL when it has none that is exact. */
extern MT_HIDDEN bool mt_size_classes_of_jemalloc;
extern MT_HIDDEN size_t (*mt_good_size)(size_t);
extern MT_HIDDEN uint32_t mt_size_table[MT_SIZE_STEPS];

/* Whether the allocator resolved as malloc has such a function; called
 * once, after the symbols are resolved. */
bool mt_size_classes_probe(void);
size_t mt_size_class_fill(size_t step, void *p);

/* The table's step for n, below MT_LARGE_BYTES. */
static inline size_t mt_size_step(size_t n)
{
	return n <= MT_SIZE_FINE_MAX
		       ? (n + 7) >> 3
		       : MT_SIZE_FINE_MAX / 8 + ((n - MT_SIZE_FINE_MAX + 511) >> 9);
}

/* The usable size of p, malloc(n)'s block, for n below MT_LARGE_BYTES;
 * 0 when not known. */
static inline size_t mt_size_class(size_t n, void *p)
{
	size_t step = mt_size_step(n);
	uint32_t u = __atomic_load_n(&mt_size_table[step], __ATOMIC_RELAXED);
	return u ? u : mt_size_class_fill(step, p);
}

#endif
