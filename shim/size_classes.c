#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>

#include "size_classes.h"
#include "symbols.h"
#include "thread.h"
#include "objects.h"

size_t (*mt_good_size)(size_t);
bool mt_size_classes_of_jemalloc;
uint32_t mt_size_table[MT_SIZE_STEPS];

_Static_assert(MT_SIZE_STEPS - 1 == MT_SIZE_FINE_MAX / 8 +
					  (MT_LARGE_BYTES - 1 - MT_SIZE_FINE_MAX + 511) / 512,
	       "the last step is that of MT_LARGE_BYTES - 1");

static size_t (*nallocx)(size_t, int);

static size_t tcmalloc_good_size(size_t n)
{
	return nallocx(n, 0);
}

/* (jemalloc's nallocx of 0 is not malloc(0)'s block: that is one byte's) */
static size_t jemalloc_good_size(size_t n)
{
	return nallocx(n ? n : 1, 0);
}

/* The same object serves malloc and fn (a library linked to another
 * allocator's nallocx is not the one in use). */
static bool same_object(void *fn)
{
	struct mt_object a, b;
	return fn && mt_object_of(fn, &a) && mt_object_of(mt_symbols_allocator_malloc(), &b) &&
	       a.base == b.base;
}

bool mt_size_classes_probe(void)
{
	size_t (*good)(size_t) = NULL;
	/* (dlsym's allocations are the shim's own) */
	mt_tls.hidden++;
	void *mi = dlsym(RTLD_DEFAULT, "mi_good_size");
	void *tc = dlsym(RTLD_DEFAULT, "tc_nallocx");
	void *je = dlsym(RTLD_DEFAULT, "nallocx");
	if (same_object(mi))
		good = (size_t (*)(size_t))mi;
	else if (same_object(tc)) {
		nallocx = (size_t (*)(size_t, int))tc;
		good = tcmalloc_good_size;
	} else if (same_object(je)) {
		nallocx = (size_t (*)(size_t, int))je;
		good = jemalloc_good_size;
		mt_size_classes_of_jemalloc = true;
	}
	mt_good_size = good;
	mt_tls.hidden--;
	return mt_good_size != NULL;
}

/* The sizes of a step: (first, last]. */
static size_t step_last(size_t step)
{
	return step <= MT_SIZE_FINE_MAX / 8
		       ? step * 8
		       : MT_SIZE_FINE_MAX + (step - MT_SIZE_FINE_MAX / 8) * 512;
}

static size_t step_first(size_t step)
{
	return step == 0 ? 0 : step_last(step - 1) + 1;
}

size_t mt_size_class_fill(size_t step, void *p)
{
	size_t (*good)(size_t) = __atomic_load_n(&mt_good_size, __ATOMIC_RELAXED);
	if (!good || step >= MT_SIZE_STEPS)
		return 0;
	size_t u = good(step_last(step)), real = mt_real.malloc_usable_size(p);
	/* (a step across two classes: its sizes' blocks are asked for) */
	if (good(step_first(step)) != u)
		return real;
	/* (0: tcmalloc's lookup answers nothing until its own constructor
	 * has run, when its size classes are right already) */
	if (real == 0)
		return u;
	if (real != u) {
		__atomic_store_n(&mt_good_size, NULL, __ATOMIC_RELAXED);
		return real;
	}
	/* (racing threads store the same value) */
	__atomic_store_n(&mt_size_table[step], (uint32_t)u, __ATOMIC_RELAXED);
	return u;
}
