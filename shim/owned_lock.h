/* A lock whose word is its holder's thread pointer, set in one atomic
 * step.  A signal handler (exit() called from one, and the shim's end
 * after it) can then tell, at any instant, a lock the thread it
 * interrupted holds from one another thread holds: the first will never
 * be given back, the second will.  (An error-checking pthread mutex
 * cannot: it takes its word first and records its owner after, and a
 * signal between the two left the summary waiting for ever.)
 *
 * For short sections only: a waiter spins. */
#ifndef MT_OWNED_LOCK_H
#define MT_OWNED_LOCK_H

#include <stdbool.h>
#include <stdint.h>

typedef uintptr_t mt_owned_lock;

static inline uintptr_t mt_lock_self(void)
{
	return (uintptr_t)__builtin_thread_pointer();
}

/* Held by this thread: by the code a signal handler interrupted. */
static inline bool mt_lock_is_mine(const mt_owned_lock *l)
{
	return __atomic_load_n(l, __ATOMIC_RELAXED) == mt_lock_self();
}

static inline bool mt_lock_try(mt_owned_lock *l)
{
	uintptr_t free = 0;
	return __atomic_compare_exchange_n(l, &free, mt_lock_self(), false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void mt_lock_take(mt_owned_lock *l)
{
	while (!mt_lock_try(l))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

/* Taken unless this thread holds it already; says which. */
static inline bool mt_lock_take_unless_mine(mt_owned_lock *l)
{
	if (mt_lock_is_mine(l))
		return false;
	mt_lock_take(l);
	return true;
}

static inline void mt_lock_give(mt_owned_lock *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
