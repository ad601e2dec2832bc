/* What the interposers report: each describes one call that happened,
 * counts it in the thread's counters, and emits it to the sinks that are
 * on (emit.h).  The commonest calls on glibc are counted, and written
 * into the native trace, inline. */
#ifndef MEMTRACE_PROBE_H
#define MEMTRACE_PROBE_H

#include <stdint.h>
#include <sys/mman.h>

#include "allocator_imports.h"
#include "block_sizes.h"
#include "loader_blocks.h"
#include "rss.h"
#include "sites.h"
#include "glibc_heap.h"
#include "symbols.h"
#include "thread.h"
#include "emit.h"

/* Usable size of a live block (0 for NULL).  On glibc it is read from the
 * chunk header, as glibc's own malloc_usable_size does, without the call
 * (the layout is checked against it at start-up, see symbols.c). */
static inline size_t mt_usable(void *p)
{
	if (!p)
		return 0;
	if (__builtin_expect(mt_glibc_chunks, 1))
		return mt_chunk_usable(mt_chunk_head(p));
	return mt_real.malloc_usable_size(p);
}

/* Are the blocks of code at caller kept apart (loader_blocks.h)?  Those
 * of the loader, on jemalloc and allocators the shim does not know; not on
 * glibc, whose sizes are read inline, nor on tcmalloc and mimalloc, whose
 * lookups touch no state of the thread. */
static inline bool mt_keeps_loader_blocks(const void *caller)
{
	return mt_loader_blocks_kept && mt_is_loader_code(caller);
}

/* The usable size of a block another allocator than glibc's made, freed
 * by caller: the loader's blocks are not the allocator's to tell
 * (loader_blocks.h); a small block's is its page's (block_sizes.h). */
static inline size_t mt_usable_other(void *p, const void *caller)
{
	if (__builtin_expect(mt_keeps_loader_blocks(caller), 0))
		return mt_loader_block_take(p);
	size_t usable = mt_block_size_get(p);
	return usable ? usable : mt_real.malloc_usable_size(p);
}

/* Is a malloc-API call the program's?  Not while the shim does its own work
 * (start-up, exit), nor when the allocator calls its own entry points
 * through the PLT: a memalign that calls malloc is one call, not two.
 * glibc never does that, and there every caller in libc (strdup, stdio)
 * is a genuine user of the heap. */
static inline bool mt_program_call(const void *caller)
{
	/* The fast path's byte first: it is read next anyway, and glibc
	 * never nests, so the common case skips one test. */
	return __builtin_expect(mt_tls.hidden == 0, 1) &&
	       (__builtin_expect(mt_fast_is_glibc(mt_fast), 1) ||
		!(mt_allocator_nests && mt_is_allocator_code(caller)));
}

/* The same for malloc and for free, where the allocator is known not to
 * be glibc's: only an allocator that imports them can call them itself. */
static inline bool mt_program_malloc(const void *caller)
{
	return __builtin_expect(mt_tls.hidden == 0, 1) &&
	       !(mt_allocator_calls_malloc && mt_is_allocator_code(caller));
}

static inline bool mt_program_free(const void *caller)
{
	return __builtin_expect(mt_tls.hidden == 0, 1) &&
	       !(mt_allocator_calls_free && mt_is_allocator_code(caller));
}

/* A new peak of live bytes (rare): checked, then p returned. */
void *mt_peak_then_return(struct mt_thread *t, int64_t live, void *p);
/* The thread's allocated bytes reached its next sample (rare): the
 * block's site sampled, then as mt_count_alloc_of. */
void *mt_sample_then_return(struct mt_thread *t, void *p, size_t usable,
			    const void *caller);
/* An allocation none of the paths below takes (a thread's first, a failed
 * one, LTTng on, ...). */
void *mt_probe_alloc_slow(enum mt_call call, size_t requested, void *p,
			  const void *caller);
/* glibc with a trace, a block from the heap or not (malloc's own copy has
 * the entry as a constant). */
void *mt_alloc_traced(struct mt_thread *t, enum mt_call call, size_t requested,
		      void *p, const void *caller);
void *mt_malloc_traced(struct mt_thread *t, size_t requested, void *p,
		       const void *caller);
/* A large block from glibc's heap, which moved nothing: counted, and its
 * site. */
void *mt_large_alloc_at(struct mt_thread *t, enum mt_call call,
			size_t requested, void *p, size_t usable,
			const void *caller);
/* Another allocator than glibc's: its usable size costs a call. */
void *mt_alloc_other(struct mt_thread *t, enum mt_call call, size_t requested,
		     void *p, const void *caller);

/* A malloc of n bytes from caller through the allocator's entry `real`
 * (C++'s operator new on an allocator that defines its own), counted as
 * malloc counts it (interpose.c). */
void *mt_malloc_through(void *(*real)(size_t n), size_t n, const void *caller);

/* An allocation counted; returns p. */
static inline __attribute__((always_inline)) void *
mt_count_alloc_of(struct mt_thread *t, enum mt_call call, size_t requested,
		  void *p, size_t usable, const void *caller)
{
	uint64_t allocated = mt_count_alloc(&t->c, call, requested, usable);
	if (__builtin_expect(allocated >= t->sample_at, 0))
		return mt_sample_then_return(t, p, usable, caller);
	int64_t live = (int64_t)(allocated - t->c.freed);
	if (__builtin_expect(live > t->live_mark, 0))
		return mt_peak_then_return(t, live, p);
	return p;
}

/* An allocation entry returned p (NULL on failure).  Returns p.  Inline:
 * the common case (glibc, a small chunk from the heap) is counted in the
 * wrapper itself, with no call but the real one; the rest are tail calls. */
static inline __attribute__((always_inline)) void *
mt_probe_alloc(enum mt_call call, size_t requested, void *p, const void *caller)
{
	struct mt_thread *t = mt_tls.thread;

	if (__builtin_expect(mt_fast == MT_FAST_GLIBC && t && p, 1)) {
		size_t head = mt_chunk_head(p);
		size_t usable = mt_chunk_usable(head);
		if (__builtin_expect(!(head & MT_CHUNK_MMAPPED) && !mt_break_moved(),
				     1)) {
			if (__builtin_expect(usable >= MT_LARGE_BYTES, 0))
				return mt_large_alloc_at(t, call, requested, p,
							 usable, caller);
			return mt_count_alloc_of(t, call, requested, p, usable, caller);
		}
	} else if (mt_fast == MT_FAST_GLIBC_TRACING && t && p) {
		return call == MT_CALL_MALLOC
			       ? mt_malloc_traced(t, requested, p, caller)
			       : mt_alloc_traced(t, call, requested, p, caller);
	} else if (mt_fast == MT_FAST_OTHER && t && p) {
		return mt_alloc_other(t, call, requested, p, caller);
	}
	return mt_probe_alloc_slow(call, requested, p, caller);
}
/* The same for realloc's result, whose old block was accounted for. */
void *mt_probe_realloc(enum mt_call call, size_t requested, void *p,
		       const void *caller);
/* The same for the aligned family, whose alignment the trace records. */
void *mt_probe_aligned(enum mt_call call, size_t align, size_t requested,
		       void *p, const void *caller);

/* free() of a block of `usable` bytes. */
static inline __attribute__((always_inline)) void
mt_count_free_of(struct mt_thread *t, size_t usable)
{
	mt_count_call(&t->c, MT_CALL_FREE);
	if (__builtin_expect(usable >= MT_LARGE_BYTES, 0)) {
		/* Marked before it is counted freed, and until the real free
		 * returns (mt_rss_large_freed): a sample between saw its
		 * pages resident and no block live, memory kept that was not
		 * (rss.c). */
		__atomic_store_n(&t->large_in_flight, usable, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		mt_large_free(t, usable);
	}
	mt_count_free(&t->c, usable);
}

/* free() of a small block, whose size the map of pages gave (it holds no
 * large block's: block_sizes.h). */
static inline __attribute__((always_inline)) void
mt_count_small_free_of(struct mt_thread *t, size_t usable)
{
	mt_count_call(&t->c, MT_CALL_FREE);
	mt_count_free(&t->c, usable);
}

/* Has the thread freed another MiB in small blocks since it last looked
 * whether resident memory is due a sample (rss.h)?  Asked before the
 * real free, so that both ways end in a tail call and free() needs no
 * frame. */
static inline bool mt_small_frees_due(const struct mt_thread *t)
{
	return __builtin_expect(t->c.freed >= t->rss_check_at, 0);
}

/* A block of `usable` bytes is given back (realloc's old block; its site
 * is mt_site_realloc's). */
static inline void mt_probe_release(size_t usable)
{
	struct mt_thread *t = mt_self();
	mt_count_free(&t->c, usable);
	if (usable >= MT_LARGE_BYTES)
		mt_large_free(t, usable);
}

/* free(p): counted before the real call, while the size can still be read
 * and before another thread can reuse the address. */
static inline void mt_probe_free(struct mt_thread *t, void *p,
				 const void *caller)
{
	if (!p || mt_in_boot_arena(p)) {
		mt_count_call(&t->c, MT_CALL_FREE);
		MT_EMIT(free, t, NULL, 0);
		return;
	}
	size_t usable;
	if (mt_glibc_chunks) {
		size_t head = mt_chunk_head(p);
		usable = mt_chunk_usable(head);
		if (usable >= MT_LARGE_BYTES)
			mt_site_free(p, caller);
		if (head & MT_CHUNK_MMAPPED)
			mt_glibc_chunk_freed(t, p, head);
	} else {
		usable = mt_usable_other(p, caller);
		if (usable >= MT_LARGE_BYTES)
			mt_site_free(p, caller);
	}
	mt_count_free_of(t, usable);
	MT_EMIT(free, t, p, usable);
}

/* glibc's heap moved, seen by this thread (out of line: a caller then
 * keeps nothing across its own call). */
void mt_probe_break_moved(void);

/* After a real call that may have moved glibc's heap (free's trim). */
static inline void mt_probe_after_free(void)
{
	if (__builtin_expect(mt_break_moved(), 0))
		mt_probe_break_moved();
}

static inline void mt_probe_call(enum mt_call call)
{
	mt_count_call(&mt_self()->c, call);
}

/* Memory system calls.  Each kernel call is counted once, by the innermost
 * interposer it passed: a libc-style wrapper (mmap, sbrk) counts it only if
 * no syscall() below it already did, which is how tcmalloc's own mmap and
 * sbrk reach the kernel.  mt_sys_begin() is called before the real call. */
static inline unsigned mt_sys_begin(void *caller)
{
	if (mt_tls.sys_depth++ == 0) {
		mt_tls.sys_by_allocator = mt_is_allocator_code(caller);
		mt_tls.sys_caller = caller;
	}
	return mt_tls.sys_seen;
}

/* A munmap about to be made by the outermost wrapper: what the mapping
 * held (rss.h), for one of MT_LARGE_BYTES or more. */
static inline void mt_sys_unmapping(void *addr, size_t len)
{
	if (__builtin_expect(len >= MT_LARGE_BYTES, 0) &&
	    mt_tls.sys_depth == 1 && !mt_tls.hidden)
		mt_rss_unmapping(addr, len, mt_tls.sys_by_allocator);
}

/* An madvise about to be made by the outermost wrapper: what a purge's
 * memory held, as for mt_sys_unmapping (a jemalloc that purges a NumPy
 * program's arrays, in huge pages, faulted fewer times than it had pages
 * resident, and passed for first touch: new-user trial 29). */
static inline void mt_sys_purging(void *addr, size_t len, int advice)
{
	if (__builtin_expect(len >= MT_LARGE_BYTES, 0) &&
	    (advice == MADV_DONTNEED || advice == MADV_FREE) &&
	    mt_tls.sys_depth == 1 && !mt_tls.hidden)
		mt_rss_purging(addr, len, mt_tls.sys_by_allocator);
}

static inline void mt_sys_end(void)
{
	mt_tls.sys_depth--;
}

static inline bool mt_sys_counted_since(unsigned mark)
{
	return mt_tls.sys_seen != mark;
}

/* A call of mmap, sbrk, syscall, ... (whether or not it reached the
 * kernel), with its main arguments and result for the trace. */
void mt_probe_sys_entry(enum mt_call call, uint64_t addr, uint64_t len,
			uint64_t arg, int64_t result);
void mt_probe_sys(enum mt_sys sys, uint64_t bytes);
void mt_probe_madvise(const void *addr, int advice, uint64_t bytes);
/* The calloc of a large block of `total` bytes returned p: the purges the
 * allocator made inside it that covered the block are its zeroing
 * (counters.h). */
void mt_probe_calloc_done(const void *p, size_t total);
/* The program break moved from `from` to `to` (equal: no move). */
void mt_probe_brk(uintptr_t from, uintptr_t to);
/* The program break before a brk whose caller does not report it. */
uintptr_t mt_break_before(void);

#endif
