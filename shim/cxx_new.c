/* C++'s operator new and delete.  jemalloc, tcmalloc and mimalloc define
 * their own, which allocate without calling malloc: a C++ program on them
 * would allocate out of the shim's sight.  So the shim defines them too
 * (it is loaded first), forwards each new to the next definition, and
 * counts it as the malloc it is; with glibc the next definition is the C++
 * runtime's, which calls malloc (counted there), and is only forwarded.
 * Every delete is the free it is (the backends' deletes are their free),
 * through the shim's free.  The next definitions are found at the first
 * call: a C++ library may be loaded after the program starts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "visibility.h"
#include "objects.h"

#define CALLER __builtin_return_address(0)

enum op { NEW, NEW_ARRAY, NEW_NOTHROW, NEW_ARRAY_NOTHROW, NEW_ALIGNED,
	  NEW_ARRAY_ALIGNED, NEW_ALIGNED_NOTHROW, NEW_ARRAY_ALIGNED_NOTHROW,
	  OPS };

static const char *const names[OPS] = {
	[NEW] = "_Znwm",
	[NEW_ARRAY] = "_Znam",
	[NEW_NOTHROW] = "_ZnwmRKSt9nothrow_t",
	[NEW_ARRAY_NOTHROW] = "_ZnamRKSt9nothrow_t",
	[NEW_ALIGNED] = "_ZnwmSt11align_val_t",
	[NEW_ARRAY_ALIGNED] = "_ZnamSt11align_val_t",
	[NEW_ALIGNED_NOTHROW] = "_ZnwmSt11align_val_tRKSt9nothrow_t",
	[NEW_ARRAY_ALIGNED_NOTHROW] = "_ZnamSt11align_val_tRKSt9nothrow_t",
};

/* The next definition of each, and for the C++ runtime's (which calls
 * malloc) the same again in `forward`: the one the entries jump to
 * without a test more. */
static struct {
	void *fn;
	void *forward;
} next[OPS];

static void *resolve(enum op op)
{
	void *fn = __atomic_load_n(&next[op].fn, __ATOMIC_ACQUIRE);
	if (fn)
		return fn;
	mt_tls.hidden++;
	fn = dlsym(RTLD_NEXT, names[op]);
	struct mt_object at;
	bool runtime = fn && mt_object_of(fn, &at) &&
		       (strstr(at.path, "libstdc++") || strstr(at.path, "libc++"));
	mt_tls.hidden--;
	if (!fn) /* (no C++ runtime: whoever calls this is not C++) */
		abort();
	if (runtime)
		__atomic_store_n(&next[op].forward, fn, __ATOMIC_RELAXED);
	__atomic_store_n(&next[op].fn, fn, __ATOMIC_RELEASE);
	return fn;
}

static bool is_forwarded(enum op op)
{
	return __atomic_load_n(&next[op].forward, __ATOMIC_RELAXED) != NULL;
}

typedef void *new_fn(size_t);
typedef void *new_nothrow_fn(size_t, const void *);
typedef void *new_aligned_fn(size_t, size_t);
typedef void *new_aligned_nothrow_fn(size_t, size_t, const void *);

/* The entry to call for the backend's op, whose large block's site is to
 * be credited with what the allocator does inside it (sites.h). */
static void *expect(enum op op, size_t n, const void *caller)
{
	void *fn = resolve(op);
	if (!is_forwarded(op) && mt_program_call(caller))
		mt_site_expect(n);
	return fn;
}

static void *counted(enum op op, void *p, size_t n, size_t align,
		     const void *caller)
{
	if (is_forwarded(op) || !mt_program_call(caller))
		return p;
	return align ? mt_probe_aligned(MT_CALL_ALIGNED_ALLOC, align, n, p, caller)
		     : mt_probe_alloc(MT_CALL_MALLOC, n, p, caller);
}

/* new and new[]'s common case is a jump: to the C++ runtime's (glibc's
 * way), or to the backend's through malloc's own counting (they are the
 * malloc they are, and most of a C++ program's blocks). */
static __attribute__((noinline)) void *new_slow(enum op op, size_t n,
					       const void *caller)
{
	new_fn *fn = (new_fn *)resolve(op);
	if (is_forwarded(op))
		return fn(n);
	return mt_malloc_through(fn, n, caller);
}

#define NEW_ENTRY(name, op)                                                  \
	MT_EXPORT void *name(size_t n)                                       \
	{                                                                    \
		new_fn *fn = __atomic_load_n(&next[op].forward,              \
					     __ATOMIC_RELAXED);              \
		if (__builtin_expect(fn != NULL, 1))                         \
			return fn(n);                                        \
		/* (forward, stored before fn, read again after it) */      \
		fn = __atomic_load_n(&next[op].fn, __ATOMIC_ACQUIRE);        \
		if (__builtin_expect(fn != NULL && !is_forwarded(op), 1))    \
			return mt_malloc_through(fn, n, CALLER);             \
		return new_slow(op, n, CALLER);                              \
	}
#define NEW_NOTHROW_ENTRY(name, op)                                          \
	MT_EXPORT void *name(size_t n, const void *nothrow)                  \
	{                                                                    \
		void *p = ((new_nothrow_fn *)expect(op, n, CALLER))(n,       \
								 nothrow);   \
		return counted(op, p, n, 0, CALLER);                         \
	}
#define NEW_ALIGNED_ENTRY(name, op)                                          \
	MT_EXPORT void *name(size_t n, size_t align)                         \
	{                                                                    \
		void *p = ((new_aligned_fn *)expect(op, n, CALLER))(n,       \
								 align);     \
		return counted(op, p, n, align, CALLER);                     \
	}
#define NEW_ALIGNED_NOTHROW_ENTRY(name, op)                                  \
	MT_EXPORT void *name(size_t n, size_t align, const void *nothrow)    \
	{                                                                    \
		void *p = ((new_aligned_nothrow_fn *)expect(op, n, CALLER))( \
			n, align, nothrow);                                  \
		return counted(op, p, n, align, CALLER);                     \
	}

NEW_ENTRY(_Znwm, NEW)
NEW_ENTRY(_Znam, NEW_ARRAY)
NEW_NOTHROW_ENTRY(_ZnwmRKSt9nothrow_t, NEW_NOTHROW)
NEW_NOTHROW_ENTRY(_ZnamRKSt9nothrow_t, NEW_ARRAY_NOTHROW)
NEW_ALIGNED_ENTRY(_ZnwmSt11align_val_t, NEW_ALIGNED)
NEW_ALIGNED_ENTRY(_ZnamSt11align_val_t, NEW_ARRAY_ALIGNED)
NEW_ALIGNED_NOTHROW_ENTRY(_ZnwmSt11align_val_tRKSt9nothrow_t,
			  NEW_ALIGNED_NOTHROW)
NEW_ALIGNED_NOTHROW_ENTRY(_ZnamSt11align_val_tRKSt9nothrow_t,
			  NEW_ARRAY_ALIGNED_NOTHROW)

/* Every form of delete: free(p), as the C++ runtime's and the backends'
 * are (the size and alignment they are told are not needed).  Through the
 * exported free, so that it is counted once, as a program's free is. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DELETE_ENTRY(name, ...)                                              \
	MT_EXPORT void name(void *p, ##__VA_ARGS__)                          \
	{                                                                    \
		free(p);                                                     \
	}

DELETE_ENTRY(_ZdlPv)
DELETE_ENTRY(_ZdaPv)
DELETE_ENTRY(_ZdlPvm, size_t size)
DELETE_ENTRY(_ZdaPvm, size_t size)
DELETE_ENTRY(_ZdlPvRKSt9nothrow_t, const void *nothrow)
DELETE_ENTRY(_ZdaPvRKSt9nothrow_t, const void *nothrow)
DELETE_ENTRY(_ZdlPvSt11align_val_t, size_t align)
DELETE_ENTRY(_ZdaPvSt11align_val_t, size_t align)
DELETE_ENTRY(_ZdlPvmSt11align_val_t, size_t size, size_t align)
DELETE_ENTRY(_ZdaPvmSt11align_val_t, size_t size, size_t align)
DELETE_ENTRY(_ZdlPvSt11align_val_tRKSt9nothrow_t, size_t align,
	     const void *nothrow)
DELETE_ENTRY(_ZdaPvSt11align_val_tRKSt9nothrow_t, size_t align,
	     const void *nothrow)
