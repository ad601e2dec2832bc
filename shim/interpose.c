/* The interposed surface: every exported function forwards to the next
 * definition (the backend's or libc's) and reports the call to a probe. */
/* mmap and mmap64 are two exported names here: keep the headers from
 * renaming one into the other. */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <malloc.h>
#include <stdarg.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/seccomp.h>
#include <unistd.h>

#include "crash.h"
#include "diag.h"
#include "lifecycle.h"
#include "probe.h"
#include "rawsys.h"
#include "rss.h"
#include "sandbox_env.h"
#include "sites.h"
#include "size_classes.h"
#include "stack_room.h"
#include "visibility.h"
#include "trace.h"
#include "trace_buf.h"


/* ---- the malloc API ------------------------------------------------- */

/* The caller's address tells the program's calls from the allocator's own
 * (see mt_program_call); read it in the exported function itself. */
#define CALLER __builtin_return_address(0)

/* The allocator's entry for a block of n bytes: its malloc, or its C++
 * operator new (cxx_new.c), which is the same call but for the failure. */
typedef void *alloc_entry(size_t n);

/* An allocator whose size classes give the usable sizes (size_classes.h):
 * a small block's is a load from their table, its step already filled,
 * and is noted in the map its free reads it from (block_sizes.h: a table
 * is filled only on an allocator that has one).  The rest takes the
 * general way. */
static __attribute__((noinline)) void *
malloc_classed_slow(size_t n, const void *caller, alloc_entry *real)
{
	bool counted = mt_program_call(caller);
	if (counted)
		mt_site_expect(n);
	void *p = real(n);
	return counted ? mt_probe_alloc(MT_CALL_MALLOC, n, p, caller) : p;
}

/* What malloc_classed leaves to a call: a step of the table or a leaf of
 * the map not there yet, a failure, a thread's first block; with a trace,
 * an event not written inline (`left`). */
static __attribute__((noinline)) void *
malloc_classed_rest(struct mt_thread *t, size_t n, void *p, uint32_t usable,
		    const void *caller, enum mt_inline_left left)
{
	if (!usable && p)
		usable = mt_size_class(n, p); /* (its step filled) */
	if (!usable || usable >= MT_LARGE_BYTES || !p || !t)
		return mt_probe_alloc(MT_CALL_MALLOC, n, p, caller);
	mt_block_size_put_small(p, usable);
	if (left == MT_INLINE_FLUSH)
		mt_trace_flush(t->trace);
	else if (left == MT_INLINE_COLD)
		mt_trace_alloc(t, MT_CALL_MALLOC, 0, n, p, usable);
	return mt_count_alloc_of(t, MT_CALL_MALLOC, n, p, usable, caller);
}

/* The caller's tests before the call, and no call after it but tail
 * calls: little to keep across it.  `traced`: the event written inline
 * too, as glibc's is. */
static inline __attribute__((always_inline)) void *
malloc_classed_body(size_t n, const void *caller, alloc_entry *real,
		    bool traced)
{
	if (__builtin_expect(!mt_program_malloc(caller) || n >= MT_LARGE_BYTES ||
				     mt_keeps_loader_blocks(caller),
			     0))
		return malloc_classed_slow(n, caller, real);
	void *p = real(n);
	struct mt_thread *t = mt_tls.thread;
	uint32_t usable = __atomic_load_n(&mt_size_table[mt_size_step(n)],
					  __ATOMIC_RELAXED);
	uint16_t *slot = p ? mt_block_size_slot(p, false) : NULL;
	/* (a small request may get a large block: its site is followed) */
	if (__builtin_expect(usable - 1 >= MT_LARGE_BYTES - 1 || !slot || !t, 0))
		return malloc_classed_rest(t, n, p, usable, caller,
					   traced ? MT_INLINE_COLD : MT_INLINE_DONE);
	mt_block_size_set(slot, (uint16_t)(usable >> 3));
	if (traced) {
		enum mt_inline_left left =
			mt_trace_alloc_inline(t, MT_CALL_MALLOC, n, p, usable);
		if (__builtin_expect(left != MT_INLINE_DONE, 0))
			return malloc_classed_rest(t, n, p, usable, caller, left);
	}
	return mt_count_alloc_of(t, MT_CALL_MALLOC, n, p, usable, caller);
}

static __attribute__((noinline)) void *
malloc_classed(size_t n, const void *caller, alloc_entry *real)
{
	return malloc_classed_body(n, caller, real, false);
}

static __attribute__((noinline)) void *
malloc_classed_traced(size_t n, const void *caller, alloc_entry *real)
{
	return malloc_classed_body(n, caller, real, true);
}

/* The ways of another allocator than glibc's, by mt_fast (NULL: none). */
typedef void *malloc_way(size_t n, const void *caller, alloc_entry *real);
static malloc_way *const other_ways[] = {
	[MT_FAST_OTHER] = malloc_classed,
	[MT_FAST_OTHER_TRACING] = malloc_classed_traced,
};

void *mt_malloc_through(alloc_entry *real, size_t n, const void *caller)
{
	/* (an allocator's own new through the PLT, as tcmalloc's
	 * MallocExtension makes, is not the program's) */
	if (__builtin_expect(!mt_program_call(caller), 0))
		return real(n);
	unsigned fast = mt_fast;
	if (__builtin_expect(fast < sizeof other_ways / sizeof *other_ways &&
				     other_ways[fast],
			     1))
		return other_ways[fast](n, caller, real);
	return malloc_classed_slow(n, caller, real);
}

MT_EXPORT void *malloc(size_t n)
{
	/* (one test on glibc's way, as before the others had theirs) */
	if (__builtin_expect(!mt_fast_is_glibc(mt_fast), 0)) {
		if (mt_fast == MT_FAST_OTHER)
			return malloc_classed(n, CALLER, mt_real.malloc);
		if (mt_fast == MT_FAST_OTHER_TRACING)
			return malloc_classed_traced(n, CALLER, mt_real.malloc);
	}
	if (__builtin_expect(__atomic_load_n(&mt_rss_falls_armed,
					     __ATOMIC_RELAXED), 0))
		mt_rss_before_malloc(n);
	void *p = mt_real.malloc(n);
	return mt_program_call(CALLER) ? mt_probe_alloc(MT_CALL_MALLOC, n, p, CALLER)
				       : p;
}

/* The real free, then the look mt_small_frees_due asked for. */
static __attribute__((noinline)) void free_then_look(struct mt_thread *t, void *p)
{
	mt_real.free(p);
	mt_rss_after_small_frees(t);
}

static __attribute__((noinline)) void free_slow(void *p, bool counted,
					       const void *caller)
{
	/* A free of NULL in a thread's last moments, after the TSD
	 * destructors detached its block: glibc's own, at every thread's end
	 * (__libc_thread_freeres).  Attaching there took a block that
	 * nothing gave back, one per thread ever made, and each thread's
	 * attach walked them all (10,000 threads: 36 MiB, 7x slower, and
	 * quadratic).  Nothing to free, and not the program's. */
	if (!p && !mt_tls.thread && mt_tls.seen)
		return;
	struct mt_thread *t = mt_self();
	if (counted)
		mt_probe_free(t, p, caller);
	if (!p || mt_in_boot_arena(p))
		return;
	/* (other allocators come here only uncounted: no size needed) */
	size_t usable = mt_glibc_chunks ? mt_chunk_usable(mt_chunk_head(p)) : 0;
	if (mt_glibc_chunks && !(mt_chunk_head(p) & MT_CHUNK_MMAPPED))
		mt_glibc_free_trimming(t, p, mt_real.free);
	else {
		mt_real.free(p);
		mt_probe_after_free();
	}
	mt_site_done();
	mt_rss_large_freed(t, usable);
}

/* glibc's free of a chunk from a heap that may trim it; a large block's
 * site is credited with what the free gives back. */
static void free_heap_chunk(struct mt_thread *t, void *p, size_t usable,
			    const void *caller)
{
	bool large = usable >= MT_LARGE_BYTES;
	if (large)
		mt_site_free(p, caller);
	mt_glibc_free_trimming(t, p, mt_real.free);
	if (large) {
		mt_site_done();
		mt_rss_large_freed(t, usable);
	}
}

static __attribute__((noinline)) void
free_heap_chunk_slow(struct mt_thread *t, void *p, size_t usable,
		     const void *caller)
{
	free_heap_chunk(t, p, usable, caller);
}

/* What free_traced leaves to a call: the rest of the event, the free. */
static __attribute__((noinline)) void
free_traced_rest(struct mt_thread *t, enum mt_inline_left left, void *p,
		 size_t usable, const void *caller)
{
	if (left == MT_INLINE_FLUSH)
		mt_trace_flush(t->trace);
	else if (left == MT_INLINE_COLD)
		mt_trace_free(t, p, usable);
	free_heap_chunk(t, p, usable, caller);
}

/* glibc with a trace: the event written inline, out of free's own frame;
 * its common case (a small chunk, a warm buffer) ends in a jump to free. */
static __attribute__((noinline)) void free_traced(struct mt_thread *t, void *p,
						  const void *caller)
{
	size_t head = mt_chunk_head(p);
	size_t usable = mt_chunk_usable(head);
	if (__builtin_expect(!(head & MT_CHUNK_MMAPPED), 1)) {
		mt_count_free_of(t, usable);
		enum mt_inline_left left = mt_trace_free_inline(t, p, usable);
		if (__builtin_expect(left == MT_INLINE_DONE &&
					     !mt_free_may_trim(head),
				     1)) {
			if (mt_small_frees_due(t))
				free_then_look(t, p);
			else
				mt_real.free(p);
			return;
		}
		free_traced_rest(t, left, p, usable, caller);
		return;
	}
	free_slow(p, true, caller);
}

/* Other allocators: a small block's size from the map of pages
 * (block_sizes.h), the rest's costs a call; there is no break to watch,
 * so a jump to free. */
static __attribute__((noinline)) void free_other(struct mt_thread *t, void *p,
						const void *caller)
{
	size_t usable = mt_usable_other(p, caller);
	mt_count_free_of(t, usable);
	if (__builtin_expect(usable >= MT_LARGE_BYTES, 0)) {
		mt_site_free(p, caller);
		mt_real.free(p);
		mt_site_done();
		mt_rss_large_freed(t, usable);
		return;
	}
	if (mt_small_frees_due(t))
		free_then_look(t, p);
	else
		mt_real.free(p);
}

/* The rest of a free's event that free_not_glibc did not write inline. */
static __attribute__((noinline)) void
free_traced_other_rest(struct mt_thread *t, enum mt_inline_left left, void *p,
		       size_t usable)
{
	if (left == MT_INLINE_FLUSH)
		mt_trace_flush(t->trace);
	else
		mt_trace_free(t, p, usable);
}

/* free with a trace on an allocator other than glibc's: its event
 * written inline, then the free (a function of its own: free_not_glibc's
 * common case keeps no frame). */
static __attribute__((noinline)) void
free_traced_not_glibc(struct mt_thread *t, void *p, const void *caller)
{
	size_t usable = mt_block_size_get(p);
	if (__builtin_expect(!usable, 0)) {
		free_slow(p, true, caller);
		return;
	}
	mt_count_small_free_of(t, usable);
	enum mt_inline_left left = mt_trace_free_inline(t, p, usable);
	if (__builtin_expect(left != MT_INLINE_DONE, 0))
		free_traced_other_rest(t, left, p, usable);
	if (mt_small_frees_due(t))
		free_then_look(t, p);
	else
		mt_real.free(p);
}

/* free on an allocator other than glibc's.  The common case (a small
 * block whose page's size is known) is counted here and
 * ends in a jump to free. */
static __attribute__((noinline)) void free_not_glibc(void *p, const void *caller)
{
	struct mt_thread *t = mt_tls.thread;
	unsigned char fast = mt_fast;
	bool ours = t && mt_program_free(caller) && !mt_keeps_loader_blocks(caller);
	if (__builtin_expect(fast == MT_FAST_OTHER && ours, 1)) {
		/* (NULL and the boot arena's blocks are in no page the map
		 * knows: they are told apart only when it does not) */
		size_t usable = mt_block_size_get(p);
		if (__builtin_expect(usable != 0, 1)) {
			mt_count_small_free_of(t, usable);
			if (mt_small_frees_due(t))
				free_then_look(t, p);
			else
				mt_real.free(p);
			return;
		}
		if (p && !mt_in_boot_arena(p)) {
			free_other(t, p, caller);
			return;
		}
	} else if (fast == MT_FAST_OTHER_TRACING && ours && p &&
		   !mt_in_boot_arena(p)) {
		free_traced_not_glibc(t, p, caller);
		return;
	}
	free_slow(p, mt_program_call(caller), caller);
}

/* Counted before the real call, while the size can still be read and
 * before another thread can reuse the address; then, on glibc, a look at
 * the break, which free moves when it trims the heap.  Every chunk from
 * the heap takes that one way, though a small one's free never trims: a
 * branch on the size, read from a header that is often a cache miss, went
 * the wrong way for half the frees of blocks of mixed sizes (16 to 256 B
 * at random: +69% on the bare run's CPU, +30% without it; jemalloc's and
 * tcmalloc's ways, which have no such branch, +78% and +89% of their
 * faster runs).  The common case (glibc, a chunk from the heap) is
 * written out here so it needs no stack frame but for that one call. */
MT_EXPORT void free(void *p)
{
	if (__builtin_expect(!mt_fast_is_glibc(mt_fast), 0)) {
		free_not_glibc(p, CALLER);
		return;
	}
	struct mt_thread *t = mt_tls.thread;
	bool counted = mt_program_call(CALLER);

	/* (the boot arena's blocks have a head marked mapped: symbols.c) */
	if (__builtin_expect(mt_fast == MT_FAST_GLIBC && t && counted && p, 1)) {
		size_t head = mt_chunk_head(p);
		size_t usable = mt_chunk_usable(head);
		if (__builtin_expect(!(head & MT_CHUNK_MMAPPED), 1)) {
			mt_count_free_of(t, usable);
			if (__builtin_expect(usable >= MT_LARGE_BYTES ||
						     mt_thread_arena_watched(head),
					     0)) {
				free_heap_chunk_slow(t, p, usable, CALLER);
				return;
			}
			mt_real.free(p);
			mt_probe_after_free();
			if (mt_small_frees_due(t))
				mt_rss_after_small_frees(t);
			return;
		}
	} else if (mt_fast == MT_FAST_GLIBC_TRACING && t && counted && p &&
		   !mt_in_boot_arena(p)) {
		free_traced(t, p, CALLER);
		return;
	}
	free_slow(p, counted, CALLER);
}

/* The real calloc of a large block, watched for the purges the allocator
 * makes to zero it (counters.h); a calloc a signal handler makes meanwhile
 * leaves the watch as it found it. */
static __attribute__((noinline)) void *calloc_large(size_t n, size_t size,
						    size_t total)
{
	bool was = mt_tls.in_calloc;
	mt_tls.in_calloc = true;
	void *p = mt_real.calloc(n, size);
	mt_probe_calloc_done(p, total);
	mt_tls.in_calloc = was;
	return p;
}

MT_EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		total = SIZE_MAX;
	bool counted = mt_program_call(CALLER);
	if (counted)
		mt_site_expect(total);
	void *p = __builtin_expect(total >= MT_LARGE_BYTES && total != SIZE_MAX, 0)
			  ? calloc_large(n, size, total)
			  : mt_real.calloc(n, size);
	return counted ? mt_probe_alloc(MT_CALL_CALLOC, total, p, CALLER) : p;
}

/* A block from the boot arena moves to the real heap on its first realloc. */
static void *realloc_from_arena(void *old, size_t n)
{
	size_t old_n = mt_boot_usable_size(old);
	void *p = mt_real.malloc(n);
	if (p)
		__builtin_memcpy(p, old, old_n < n ? old_n : n);
	return p;
}

/* A realloc that moved its block: what the allocator copied.  glibc moves
 * a mapped chunk into a mapping with mremap, which copies nothing. */
static void count_move(size_t old_head, const void *p, size_t old_usable,
		       size_t requested)
{
	bool remapped = mt_glibc_chunks && (old_head & MT_CHUNK_MMAPPED) &&
			(mt_chunk_head(p) & MT_CHUNK_MMAPPED);
	size_t copied = old_usable < requested ? old_usable : requested;
	mt_count_realloc_move(&mt_self()->c, remapped ? 0 : copied);
}

/* realloc and reallocarray: `requested` bytes, forwarded as (old, x, y). */
static void *realloc_common(const void *caller, enum mt_call call, void *old,
			    size_t requested,
			    void *(*forward)(void *, size_t, size_t), size_t x,
			    size_t y)
{
	bool counted = mt_program_call(caller);
	void *p;
	if (old && mt_in_boot_arena(old)) {
		p = realloc_from_arena(old, requested);
	} else {
		/* Read the old size first: after the call it may be gone. */
		size_t old_usable = !counted || !old	  ? 0
				    : mt_glibc_chunks ? mt_usable(old)
						      : mt_usable_other(old, caller);
		size_t old_head = old && mt_glibc_chunks ? mt_chunk_head(old) : 0;
		if (counted)
			mt_site_expect(requested > old_usable ? requested : old_usable);
		/* (a new block is copied into before it is counted: until
		 * then, in flight) */
		if (counted && requested >= MT_LARGE_BYTES)
			mt_rss_large_request(mt_self(), requested);
		p = forward(old, x, y);
		/* On failure (NULL for a non-zero size) the old block stays. */
		if (counted && old && (p || requested == 0)) {
			size_t usable = mt_usable(p);
			unsigned site = 0;
			mt_probe_release(old_usable);
			/* The block's site before what glibc did is inferred:
			 * a block moved onto or off a mapping is its. */
			if (old_usable >= MT_LARGE_BYTES || usable >= MT_LARGE_BYTES)
				site = mt_site_realloc(old, p, requested, usable, caller);
			if (mt_glibc_chunks)
				mt_glibc_chunk_moved(mt_self(), old_head, p);
			if (p && p != old)
				count_move(old_head, p, old_usable, requested);
			/* Both blocks were live a moment ago: the most a
			 * buffer grown this way needs. */
			if (old_usable >= MT_LARGE_BYTES)
				mt_rss_after_large_free(mt_self(), old_usable);
			MT_EMIT(realloc, mt_self(), call, old, old_usable,
					 true, requested, p, usable);
			if (site)
				MT_EMIT_EVENT(mt_self(), block_site,
					      .ptr = (uintptr_t)p, .bytes = usable,
					      .site = site);
			return mt_probe_realloc(call, requested, p, caller);
		}
		if (old)
			mt_site_pending_drop(); /* (a failure: the block stays) */
		if (counted && !p)
			mt_rss_large_request(mt_self(), 0);
	}
	return counted ? mt_probe_alloc(call, requested, p, caller) : p;
}

static void *forward_realloc(void *p, size_t n, size_t unused)
{
	(void)unused;
	return mt_real.realloc(p, n);
}

MT_EXPORT void *realloc(void *p, size_t n)
{
	return realloc_common(CALLER, MT_CALL_REALLOC, p, n, forward_realloc, n,
			      0);
}

/* reallocarray is realloc with an overflow check; done here rather than
 * forwarded, because glibc's calls realloc through the PLT (which would
 * count twice) and jemalloc and tcmalloc have none. */
static void *checked_realloc(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return mt_real.realloc(p, total);
}

MT_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		total = SIZE_MAX;
	return realloc_common(CALLER, MT_CALL_REALLOCARRAY, p, total,
			      checked_realloc, n, size);
}

MT_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	bool counted = mt_program_call(CALLER);
	if (counted)
		mt_site_expect(n);
	int r = mt_real.posix_memalign(out, align, n);
	if (counted)
		mt_probe_aligned(MT_CALL_POSIX_MEMALIGN, align, n,
				 r == 0 ? *out : NULL, CALLER);
	return r;
}

#define ALIGNED_ENTRY(name, id)                                              \
	MT_EXPORT void *name(size_t align, size_t n)                            \
	{                                                                    \
		bool counted = mt_program_call(CALLER);                      \
		if (counted)                                                 \
			mt_site_expect(n);                                   \
		void *p = mt_real.name(align, n);                            \
		return counted ? mt_probe_aligned(id, align, n, p, CALLER)   \
			       : p;                                          \
	}

ALIGNED_ENTRY(aligned_alloc, MT_CALL_ALIGNED_ALLOC)
ALIGNED_ENTRY(memalign, MT_CALL_MEMALIGN)

#define PAGE_ENTRY(name, id)                                                 \
	MT_EXPORT void *name(size_t n)                                          \
	{                                                                    \
		bool counted = mt_program_call(CALLER);                      \
		if (counted)                                                 \
			mt_site_expect(n);                                   \
		void *p = mt_real.name(n);                                   \
		return counted ? mt_probe_aligned(id, mt_page_size(), n, p,  \
						  CALLER)                    \
			       : p;                                          \
	}

PAGE_ENTRY(valloc, MT_CALL_VALLOC)
PAGE_ENTRY(pvalloc, MT_CALL_PVALLOC)

MT_EXPORT size_t malloc_usable_size(void *p)
{
	if (mt_program_call(CALLER)) {
		mt_probe_call(MT_CALL_MALLOC_USABLE_SIZE);
		MT_EMIT(usable, mt_self(), p);
	}
	return p && mt_in_boot_arena(p) ? mt_boot_usable_size(p)
					: mt_real.malloc_usable_size(p);
}

/* Not counted (not an allocation), but glibc's settings change what its
 * free and thresholds do, which the probes follow. */
MT_EXPORT int mallopt(int param, int value)
{
	mt_glibc_mallopt(param, value);
	int result = mt_real.mallopt(param, value);
	mt_glibc_mallopt_done(param, value, result);
	return result;
}

/* Whether this malloc_trim call's resident memory is looked at: two reads
 * of statm, some 7 us, where a call on a small heap takes 0.2 us; so a
 * call is looked at once 50 times what the last look took has passed
 * since it began, 2% of the time at most.  A program that trims after each
 * request, 0.7 ms apart, is looked at every time: at one a millisecond,
 * half of its 4,000 calls and of the 6.3 GiB they gave back went unseen
 * (new-user trial 31); one that trims in a tight loop can give back only
 * what it freed since. */
enum { LOOK_SHARE = 50 };
static uint64_t look_cost_ns = 7000;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool trim_looked_at(uint64_t now)
{
	static uint64_t last_ns;
	uint64_t last = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
	uint64_t wait = LOOK_SHARE * __atomic_load_n(&look_cost_ns, __ATOMIC_RELAXED);
	return (!last || now - last >= wait) &&
	       __atomic_compare_exchange_n(&last_ns, &last, now, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Not an allocation either, but glibc's trims the heap whatever its trim
 * threshold says: counted, with the break's move back it made (the move
 * itself is counted as any other, after the call). */
MT_EXPORT int malloc_trim(size_t pad)
{
	if (!mt_real.malloc_trim)
		return 0;
	if (!mt_program_call(CALLER))
		return mt_real.malloc_trim(pad);
	struct mt_thread *t = mt_self();
	/* (a move made before, out of sight, is not this call's) */
	if (mt_break_moved())
		mt_glibc_break_moved(t);
	/* (what else it gives back, glibc madvises out of sight: told by
	 * the resident memory it took away; on another allocator it trims
	 * glibc's unused heap, and what another thread gives back meanwhile
	 * is not its doing) */
	uint64_t anon_before = 0, anon_after = 0, t0 = now_ns(), t1 = 0;
	bool resident = mt_glibc_chunks && trim_looked_at(t0) &&
			mt_rss_anon_now(&anon_before);
	if (resident)
		t1 = now_ns();
	uintptr_t before = *mt_break_watch;
	int result = mt_real.malloc_trim(pad);
	uintptr_t after = *mt_break_watch;
	if (resident) {
		uint64_t t2 = now_ns();
		resident = mt_rss_anon_now(&anon_after);
		__atomic_store_n(&look_cost_ns, (t1 - t0) + (now_ns() - t2),
				 __ATOMIC_RELAXED);
	}
	uint64_t shrink = after < before ? before - after : 0;
	uint64_t fell = resident && anon_after < anon_before
				? anon_before - anon_after
				: 0;
	uint64_t purged = fell > shrink ? fell - shrink : 0;
	mt_count_malloc_trim(&t->c, shrink, purged);
	MT_EMIT_EVENT(t, malloc_trim, .shrink_bytes = shrink,
		      .purged_bytes = purged);
	if (mt_break_moved())
		mt_glibc_break_moved(t);
	return result;
}

/* ---- memory system calls -------------------------------------------- */

/* Each wrapper runs in a syscall scope: the outermost one decides, from its
 * caller's address, whether the allocator or the program made the call. */

static inline void *mmap_common(enum mt_call call, void *caller,
				void *(*forward)(void *, size_t, int, int, int,
						 off_t),
				void *addr, size_t len, int prot, int flags,
				int fd, off_t off)
{
	unsigned mark = mt_sys_begin(caller);
	void *r = forward(addr, len, prot, flags, fd, off);
	mt_probe_sys_entry(call, (uintptr_t)addr, len, (uint64_t)flags << 32 | (uint32_t)prot,
			   (int64_t)(intptr_t)r);
	if (!mt_sys_counted_since(mark))
		mt_probe_sys(MT_SYS_MMAP, r == MAP_FAILED ? 0 : len);
	mt_sys_end();
	return r;
}

MT_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	return mmap_common(MT_CALL_MMAP, CALLER, mt_real.mmap, addr, len, prot,
			   flags, fd, off);
}

MT_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		    off_t off)
{
	return mmap_common(MT_CALL_MMAP64, CALLER, mt_real.mmap64, addr, len,
			   prot, flags, fd, off);
}

MT_EXPORT int munmap(void *addr, size_t len)
{
	unsigned mark = mt_sys_begin(CALLER);
	mt_sys_unmapping(addr, len);
	int r = mt_real.munmap(addr, len);
	mt_probe_sys_entry(MT_CALL_MUNMAP, (uintptr_t)addr, len, 0, r);
	if (!mt_sys_counted_since(mark))
		mt_probe_sys(MT_SYS_MUNMAP, r == 0 ? len : 0);
	mt_sys_end();
	return r;
}

MT_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	/* (the kernel reads it with either flag: a hint with
	 * MREMAP_DONTUNMAP alone) */
	void *new_addr = flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)
				 ? va_arg(ap, void *)
				 : NULL;
	va_end(ap);

	unsigned mark = mt_sys_begin(CALLER);
	void *r = mt_real.mremap(old, old_len, new_len, flags, new_addr);
	mt_probe_sys_entry(MT_CALL_MREMAP, (uintptr_t)old, new_len, old_len,
			   (int64_t)(intptr_t)r);
	if (!mt_sys_counted_since(mark))
		mt_probe_sys(MT_SYS_MREMAP, r == MAP_FAILED ? 0 : new_len);
	mt_sys_end();
	return r;
}

MT_EXPORT int madvise(void *addr, size_t len, int advice)
{
	unsigned mark = mt_sys_begin(CALLER);
	mt_sys_purging(addr, len, advice);
	int r = mt_real.madvise(addr, len, advice);
	mt_probe_sys_entry(MT_CALL_MADVISE, (uintptr_t)addr, len, (uint64_t)advice, r);
	if (!mt_sys_counted_since(mark))
		mt_probe_madvise(addr, advice, len);
	mt_sys_end();
	return r;
}

/* brk and sbrk: the move of the break is reported with the system call
 * that made it, by whichever interposer counts that call. */
MT_EXPORT int brk(void *addr)
{
	uintptr_t before = mt_break_before();
	unsigned mark = mt_sys_begin(CALLER);
	int r = mt_real.brk(addr);
	mt_probe_sys_entry(MT_CALL_BRK, (uintptr_t)addr, 0, 0, r);
	if (!mt_sys_counted_since(mark)) {
		mt_probe_sys(MT_SYS_BRK, 0);
		if (r == 0)
			mt_probe_brk(before, (uintptr_t)addr);
	}
	mt_sys_end();
	return r;
}

MT_EXPORT void *sbrk(intptr_t delta)
{
	/* glibc's sbrk asks the kernel for the break first when it has never
	 * seen it; that hidden brk(0) is a real system call. */
	bool libc_queries = mt_libc_owns_brk() && mt_libc_curbrk() == 0;
	unsigned mark = mt_sys_begin(CALLER);
	void *r = mt_real.sbrk(delta);
	mt_probe_sys_entry(MT_CALL_SBRK, 0, (uint64_t)delta, 0, (int64_t)(intptr_t)r);
	if (!mt_sys_counted_since(mark)) {
		if (libc_queries)
			mt_probe_sys(MT_SYS_BRK, 0);
		if (delta != 0)
			mt_probe_sys(MT_SYS_BRK, 0);
		if (r != (void *)-1)
			mt_probe_brk((uintptr_t)r, (uintptr_t)r + (uintptr_t)delta);
	}
	mt_sys_end();
	return r;
}

static long memory_syscall(void *caller, long nr, long a, long b, long c,
			   long d, long e, long f)
{
	uintptr_t before = nr == SYS_brk && a ? mt_break_before() : 0;
	mt_sys_begin(caller);
	if (nr == SYS_munmap)
		mt_sys_unmapping((void *)a, (size_t)b);
	else if (nr == SYS_madvise)
		mt_sys_purging((void *)a, (size_t)b, (int)c);
	long r = mt_real.syscall(nr, a, b, c, d, e, f);
	bool ok = r != -1;
	mt_probe_sys_entry(MT_CALL_SYSCALL, (uint64_t)a, (uint64_t)b,
			   (uint64_t)nr << 32 | (uint32_t)c, r);
	switch (nr) {
	case SYS_brk:
		mt_probe_sys(MT_SYS_BRK, 0);
		if (a)
			mt_probe_brk(before, (uintptr_t)r);
		break;
	case SYS_madvise:
		mt_probe_madvise((const void *)a, (int)c, (uint64_t)b);
		break;
	case SYS_mmap:
		mt_probe_sys(MT_SYS_MMAP, ok ? (uint64_t)b : 0);
		break;
	case SYS_munmap:
		mt_probe_sys(MT_SYS_MUNMAP, ok ? (uint64_t)b : 0);
		break;
	default:
		mt_probe_sys(MT_SYS_MREMAP, ok ? (uint64_t)c : 0);
	}
	mt_sys_end();
	return r;
}

/* syscall(2): only the memory system calls are looked at. */
MT_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);

	switch (nr) {
	case SYS_brk:
	case SYS_mmap:
	case SYS_munmap:
	case SYS_mremap:
	case SYS_madvise:
		return memory_syscall(CALLER, nr, a, b, c, d, e, f);
	case SYS_seccomp:
		if (a == SECCOMP_SET_MODE_STRICT || a == SECCOMP_SET_MODE_FILTER)
			mt_lifecycle_sandbox();
		return mt_real.syscall(nr, a, b, c, d, e, f);
	/* (as libc's: the shim's threads step aside for a user namespace) */
	case SYS_unshare:
		return unshare((int)a);
	case SYS_setns:
		return setns((int)a, (int)b);
	default:
		return mt_real.syscall(nr, a, b, c, d, e, f);
	}
}

/* ---- seccomp: a filter may kill the process for a call of the shim's -- */

MT_EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a = va_arg(ap, unsigned long), b = va_arg(ap, unsigned long);
	unsigned long c = va_arg(ap, unsigned long), d = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP)
		mt_lifecycle_sandbox();
	/* (glibc's prctl is this system call and nothing more) */
	return (int)mt_real.syscall(SYS_prctl, option, a, b, c, d);
}

/* ---- threads the shim's own work starts ------------------------------ */

/* A thread started while the shim does its own work (lttng-ust's listener
 * threads, started when the shim loads it) does the shim's work too: its
 * allocations are not the program's.  The program's threads pass straight
 * through. */
struct hidden_start {
	void *(*fn)(void *);
	void *arg;
};

static void *start_hidden(void *p)
{
	struct hidden_start s = *(struct hidden_start *)p;
	mt_real.free(p);
	mt_tls.hidden++;
	return s.fn(s.arg);
}

/* ---- room for the program's threads and processes -------------------- */

/* The program's thread or process could not start (EAGAIN: RLIMIT_NPROC,
 * which counts a user's threads, the cgroup's pids.max, threads-max)
 * where the shim's threads take room it would have had bare: they stop
 * for good, once.  Whether to make the call again: they stopped now or
 * before (a child forked before keeps its own until it ends). */
static bool make_room(void)
{
	int was = errno; /* (fork's, which its caller tests again) */
	mt_tls.hidden++;
	unsigned stopped = mt_shim_threads_retire();
	if (stopped)
		mt_warn("a thread or process of the program could not start "
			"(EAGAIN: a limit on threads, RLIMIT_NPROC or the "
			"cgroup's pids.max): memtrace stopped its own %u to "
			"leave it room; from here on resident memory is sampled "
			"at exit only, and idle threads' events are written at "
			"exit",
			stopped);
	mt_tls.hidden--;
	errno = was;
	return mt_shim_threads_retired();
}

/* Before another try: a thread just joined may still count for a moment
 * (as in alone()), and a child forked before may be starting its own (it
 * keeps them).  Whether to try again: 1 s at most in all, 1 ms, then
 * 10 ms, apart. */
static bool room_again(int *tries)
{
	if (*tries >= 150)
		return false;
	struct timespec wait = {0, *tries < 50 ? 1000000 : 10000000};
	(*tries)++;
	mt_raw(-1, SYS_nanosleep, (long)&wait, 0, 0, 0, 0, 0);
	return true;
}

static __attribute__((noinline)) int
create_in_shims_room(pthread_t *thread, const pthread_attr_t *attr,
		     void *(*fn)(void *), void *arg)
{
	int err = EAGAIN;
	if (make_room())
		for (int tries = 0; err == EAGAIN && room_again(&tries);)
			err = mt_real.pthread_create(thread, attr, fn, arg);
	return err;
}

MT_EXPORT pid_t fork(void)
{
	pid_t pid = mt_real.fork();
	if (__builtin_expect(pid < 0 && errno == EAGAIN, 0) && make_room())
		for (int tries = 0; pid < 0 && errno == EAGAIN &&
				    room_again(&tries);)
			pid = mt_real.fork();
	return pid;
}

MT_EXPORT int posix_spawn(pid_t *pid, const char *path,
			  const posix_spawn_file_actions_t *actions,
			  const posix_spawnattr_t *attr, char *const argv[],
			  char *const envp[])
{
	int err = mt_real.posix_spawn(pid, path, actions, attr, argv, envp);
	if (__builtin_expect(err == EAGAIN, 0) && make_room())
		for (int tries = 0; err == EAGAIN && room_again(&tries);)
			err = mt_real.posix_spawn(pid, path, actions, attr,
						  argv, envp);
	return err;
}

MT_EXPORT int posix_spawnp(pid_t *pid, const char *file,
			   const posix_spawn_file_actions_t *actions,
			   const posix_spawnattr_t *attr, char *const argv[],
			   char *const envp[])
{
	int err = mt_real.posix_spawnp(pid, file, actions, attr, argv, envp);
	if (__builtin_expect(err == EAGAIN, 0) && make_room())
		for (int tries = 0; err == EAGAIN && room_again(&tries);)
			err = mt_real.posix_spawnp(pid, file, actions, attr,
						   argv, envp);
	return err;
}

/* glibc's system() and popen() spawn through posix_spawn's internal name,
 * which the shim does not see; their failure to start the shell is told
 * by what they return: system() the shell's "could not run" status (127)
 * with errno EAGAIN, popen() NULL with ENOMEM, which it returns for any
 * failure of its spawn (and for a FILE it could not allocate: then the
 * shim's threads stop for nothing, and the call is made again for a
 * second, as a real EAGAIN's would be). */
static bool shell_not_started(int status)
{
	return status == 127 << 8 && errno == EAGAIN;
}

MT_EXPORT int system(const char *line)
{
	int was = errno;
	errno = 0;
	int status = mt_real.system(line);
	if (__builtin_expect(shell_not_started(status), 0) && make_room())
		for (int tries = 0; shell_not_started(status) &&
				    room_again(&tries);) {
			errno = 0;
			status = mt_real.system(line);
		}
	if (errno == 0) /* (bare, the caller's errno stays as it was) */
		errno = was;
	return status;
}

MT_EXPORT FILE *popen(const char *command, const char *type)
{
	FILE *f = mt_real.popen(command, type);
	if (__builtin_expect(!f && errno == ENOMEM, 0) && make_room())
		for (int tries = 0; !f && errno == ENOMEM && room_again(&tries);)
			f = mt_real.popen(command, type);
	return f;
}

MT_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg)
{
	if (__builtin_expect(mt_tls.hidden == 0, 1)) {
		int err = mt_real.pthread_create(thread, attr, fn, arg);
		if (__builtin_expect(err == EAGAIN, 0))
			err = create_in_shims_room(thread, attr, fn, arg);
		if (!err) {
			mt_thread_started();
			mt_stack_room_thread_created(*thread, attr);
		}
		return err;
	}
	struct hidden_start *s = mt_real.malloc(sizeof *s);
	if (!s)
		return EAGAIN;
	*s = (struct hidden_start){fn, arg};
	int err = mt_real.pthread_create(thread, attr, start_hidden, s);
	if (err)
		mt_real.free(s);
	return err;
}

/* ---- exec: what this image recorded goes out before it is replaced --- */

/* An exec once memtrace stopped for a seccomp filter: the environment
 * without memtrace (sandbox_env.h), copied on this frame's stack (but for
 * an environment of more entries than a stack should hold). */
static int exec_sandboxed(const char *file, char *const argv[],
			  char *const envp[], bool search)
{
	size_t n = mt_env_count(envp);
	bool fits = n < 8192;
	char *copy[fits ? n + 1 : 1], preload[4096];
	if (fits)
		envp = mt_env_without_shim(envp, copy, preload, sizeof preload);
	return search ? mt_real.execvpe(file, argv, envp)
		      : mt_real.execve(file, argv, envp);
}

MT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (mt_lifecycle_sandboxed())
		return exec_sandboxed(path, argv, envp, false);
	mt_lifecycle_exec(path);
	int r = mt_real.execve(path, argv, envp);
	mt_lifecycle_exec_failed();
	return r;
}

MT_EXPORT int execv(const char *path, char *const argv[])
{
	if (mt_lifecycle_sandboxed())
		return exec_sandboxed(path, argv, environ, false);
	mt_lifecycle_exec(path);
	int r = mt_real.execv(path, argv);
	mt_lifecycle_exec_failed();
	return r;
}

MT_EXPORT int execvp(const char *file, char *const argv[])
{
	if (mt_lifecycle_sandboxed())
		return exec_sandboxed(file, argv, environ, true);
	mt_lifecycle_exec(file);
	int r = mt_real.execvp(file, argv);
	mt_lifecycle_exec_failed();
	return r;
}

MT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (mt_lifecycle_sandboxed())
		return exec_sandboxed(file, argv, envp, true);
	mt_lifecycle_exec(file);
	int r = mt_real.execvpe(file, argv, envp);
	mt_lifecycle_exec_failed();
	return r;
}

/* The list forms: glibc's own call execve internally, out of our sight, so
 * they are gathered into an argv here and passed on. */
#define LIST_EXEC(name, search, with_env)                                    \
	MT_EXPORT int name(const char *path, const char *arg, ...)              \
	{                                                                    \
		va_list ap;                                                  \
		size_t n = 1;                                                \
		va_start(ap, arg);                                           \
		while (va_arg(ap, const char *))                             \
			n++;                                                 \
		va_end(ap);                                                  \
		const char *argv[n + 1];                                     \
		argv[0] = arg;                                               \
		va_start(ap, arg);                                           \
		for (size_t i = 1; i <= n; i++)                              \
			argv[i] = va_arg(ap, const char *);                  \
		char *const *envp = with_env ? va_arg(ap, char *const *)     \
					     : environ;                      \
		va_end(ap);                                                  \
		if (mt_lifecycle_sandboxed())                                \
			return exec_sandboxed(path, (char *const *)argv,     \
					      envp, search);                 \
		mt_lifecycle_exec(path);                                     \
		int r_ = search ? mt_real.execvpe(path, (char *const *)argv, \
						  envp)                      \
				: mt_real.execve(path, (char *const *)argv,  \
						 envp);                      \
		mt_lifecycle_exec_failed();                                      \
		return r_;                                                   \
	}

LIST_EXEC(execl, false, false)
LIST_EXEC(execle, false, true)
LIST_EXEC(execlp, true, false)

/* ---- leaving without exit(), and fatal signals ----------------------- */

/* What the trace holds goes out first (exit() does it in the shim's
 * destructor; glibc's exit calls its own _exit, not this one). */
MT_EXPORT void _exit(int status)
{
	mt_lifecycle_exit_now(status);
	mt_real._exit(status);
	__builtin_unreachable();
}

MT_EXPORT void _Exit(int status)
{
	mt_lifecycle_exit_now(status);
	mt_real._Exit(status);
	__builtin_unreachable();
}

/* (glibc's runs the at_quick_exit handlers, then its own _exit: the
 * summary and the trace's end were lost) */
MT_EXPORT void quick_exit(int status)
{
	mt_lifecycle_exit_now(status);
	mt_real.quick_exit(status);
	__builtin_unreachable();
}

/* The shim's handler of fatal signals is not the program's to see
 * (crash.h). */
MT_EXPORT int sigaction(int sig, const struct sigaction *act,
		     struct sigaction *old)
{
	struct sigaction ours;
	if (mt_crash_in_place_of_default(sig, act, &ours))
		act = &ours;
	int r = mt_real.sigaction(sig, act, old);
	if (r == 0 && old)
		mt_crash_hide(old);
	return r;
}

MT_EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL}, ours, old;
	if (handler == SIG_DFL && mt_crash_in_place_of_default(sig, &dfl, &ours)) {
		if (mt_real.sigaction(sig, &ours, &old) != 0)
			return SIG_ERR;
		mt_crash_hide(&old);
		return old.sa_handler; /* (as glibc's signal: the union's) */
	}
	__sighandler_t previous = mt_real.signal(sig, handler);
	return mt_crash_handler_is(previous) ? SIG_DFL : previous;
}

/* ---- credentials: every thread's, the shim's too (thread.h) ---------- */

#define SETXID(name, params, args)                                           \
	MT_EXPORT int name params                                            \
	{                                                                    \
		bool told = mt_setxid_begin();                               \
		int r_ = mt_real.name args;                                  \
		mt_setxid_end(told);                                         \
		return r_;                                                   \
	}

SETXID(setuid, (uid_t u), (u))
SETXID(setgid, (gid_t g), (g))
SETXID(seteuid, (uid_t u), (u))
SETXID(setegid, (gid_t g), (g))
SETXID(setreuid, (uid_t r, uid_t e), (r, e))
SETXID(setregid, (gid_t r, gid_t e), (r, e))
SETXID(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
SETXID(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
SETXID(setgroups, (size_t n, const gid_t *g), (n, g))

/* ---- namespaces ------------------------------------------------------ */

/* The kernel lets only a process of one thread enter a new user namespace
 * (EINVAL otherwise): the shim's own threads are stopped around the call,
 * and started again.  A thread just joined may still count for a moment,
 * so EINVAL is retried briefly when there were some. */
static int alone(long nr, long a, long b)
{
	unsigned stopped = mt_shim_threads_pause();
	long r = mt_raw(-1, nr, a, b, 0, 0, 0, 0);
	for (int i = 0; r == -EINVAL && stopped && i < 50; i++) {
		struct timespec ms = {0, 1000000};
		mt_raw(-1, SYS_nanosleep, (long)&ms, 0, 0, 0, 0, 0);
		r = mt_raw(-1, nr, a, b, 0, 0, 0, 0);
	}
	mt_shim_threads_resume();
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

MT_EXPORT int unshare(int flags)
{
	if (flags & CLONE_NEWUSER)
		return alone(SYS_unshare, flags, 0);
	long r = mt_raw(-1, SYS_unshare, flags, 0, 0, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

/* nstype 0 accepts any namespace, a user namespace among them. */
MT_EXPORT int setns(int fd, int nstype)
{
	if (nstype == 0 || nstype == CLONE_NEWUSER)
		return alone(SYS_setns, fd, nstype);
	long r = mt_raw(-1, SYS_setns, fd, nstype, 0, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}
