/*
 * forward_shim: the least an LD_PRELOAD interposer of malloc and free adds,
 * printed by malloc_overhead.py beside memtrace's cost.  Each call forwards
 * to the next definition (the backend's or libc's) and does nothing else.
 * Built twice: with FORWARD_SIZES free also asks the allocator for the
 * block's usable size, the least exact live bytes need on a backend whose
 * sizes cannot be read inline (all but glibc): free is told no size, and
 * the allocator alone knows it.  (A malloc's could in principle be derived
 * from the request, so it is not charged here.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static size_t (*next_usable)(void *);

/* dlsym may allocate while it resolves malloc: served from here, never
 * freed. */
static _Alignas(16) unsigned char early[16384];
static size_t early_used;
static int resolving;

static void *early_alloc(size_t n)
{
	size_t at = early_used;
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof early - at)
		abort();
	early_used += n;
	return early + at;
}

static void resolve(void)
{
	resolving = 1;
	next_free = dlsym(RTLD_NEXT, "free");
	next_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
	next_malloc = dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
	if (!next_malloc || !next_free || !next_usable)
		abort();
}

static inline void use_size(void *p)
{
#ifdef FORWARD_SIZES
	size_t n = next_usable(p);
	__asm__ volatile("" : : "r"(n));
#else
	(void)p;
#endif
}

EXPORT void *malloc(size_t n)
{
	if (__builtin_expect(!next_malloc, 0)) {
		if (resolving)
			return early_alloc(n);
		resolve();
	}
	return next_malloc(n);
}

EXPORT void free(void *p)
{
	if (__builtin_expect((uintptr_t)p - (uintptr_t)early < sizeof early, 0))
		return;
	if (__builtin_expect(!next_free, 0)) {
		if (resolving)
			return; /* dlsym's own block, before free is known: kept */
		resolve();
	}
	use_size(p);
	next_free(p);
}
