#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include "allocator_counters.h"
#include "mode.h"
#include "thread.h"

typedef int mallctl_fn(const char *, void *, size_t *, void *, size_t);
static mallctl_fn *mallctl;

static bool thread_counters(const volatile uint64_t **allocated,
			    const volatile uint64_t **freed)
{
	uint64_t *a = NULL, *f = NULL;
	size_t len = sizeof a;
	if (!mallctl || mallctl("thread.allocatedp", &a, &len, NULL, 0) != 0 ||
	    (len = sizeof f, mallctl("thread.deallocatedp", &f, &len, NULL, 0)) != 0 ||
	    !a || !f)
		return false;
	*allocated = a;
	*freed = f;
	return true;
}

bool mt_alloc_counters_probe(void)
{
	const volatile uint64_t *a, *f;
	/* (dlsym allocates: the shim's own work, not the program's) */
	mt_tls.hidden++;
	mallctl = (mallctl_fn *)dlsym(RTLD_DEFAULT, "mallctl");
	mt_alloc_counters = thread_counters(&a, &f);
	mt_tls.hidden--;
	return mt_alloc_counters;
}

void mt_alloc_counters_fetch(void)
{
	const volatile uint64_t *a, *f;
	if (mt_tls.counters_fetched)
		return;
	mt_tls.counters_fetched = true;
	mt_tls.hidden++;
	if (thread_counters(&a, &f)) {
		mt_tls.freed_ctr = f;
		mt_tls.allocated_ctr = a; /* last: the fast path tests it */
	}
	mt_tls.hidden--;
}
