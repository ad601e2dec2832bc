#include "own_purges.h"
#include "probe.h"
#include "rss.h"
#include "rawsys.h"
#include "size_classes.h"
#include "trace.h"
#include "trace_buf.h"

/* The allocation hot path (mt_probe_alloc, inline in each wrapper) makes
 * no call in its common case and so needs no stack frame: the rare cases
 * (a thread's first event, a new peak of live bytes, a backend whose sizes
 * cost a call) are tail calls to the functions here. */
/* `fresh`: p is a new block (not realloc's, whose mapping and trace event
 * realloc_common takes care of). */
static __attribute__((noinline)) void *
alloc_slow(enum mt_call call, size_t align, size_t requested, void *p,
	   bool fresh, const void *caller)
{
	struct mt_thread *t = mt_self();
	size_t usable = mt_usable(p);
	bool large = usable >= MT_LARGE_BYTES;
	if (mt_keeps_loader_blocks(caller))
		mt_loader_block_add(p, usable);
	mt_block_size_put(p, usable, align != 0);
	/* The site first: what the allocator did for the block is its.
	 * (realloc's result has its site already: mt_site_realloc.) */
	if (large && fresh)
		mt_site_alloc(p, requested, usable, caller,
			      call == MT_CALL_REALLOC || call == MT_CALL_REALLOCARRAY);
	else if (fresh)
		mt_site_pending_drop(); /* (a failure: no block) */
	if (mt_break_moved())
		mt_glibc_break_moved(t);
	if (fresh && mt_glibc_chunks && p &&
	    (mt_chunk_head(p) & MT_CHUNK_MMAPPED))
		mt_glibc_chunk_mapped(t, mt_chunk_head(p), true);
	if (large)
		mt_large_alloc(t, usable);
	else if (!p)
		mt_rss_large_request(t, 0); /* (none came) */
	if (large || !fresh)
		mt_site_done();
	if (fresh)
		MT_EMIT(alloc, t, call, align, requested, p, usable);
	return mt_count_alloc_of(t, call, requested, p, usable, caller);
}

__attribute__((noinline)) void *
mt_large_alloc_at(struct mt_thread *t, enum mt_call call, size_t requested,
		  void *p, size_t usable, const void *caller)
{
	mt_site_alloc(p, requested, usable, caller, false);
	mt_site_done();
	mt_large_alloc(t, usable);
	return mt_count_alloc_of(t, call, requested, p, usable, caller);
}

void *mt_probe_realloc(enum mt_call call, size_t requested, void *p,
		       const void *caller)
{
	return alloc_slow(call, 0, requested, p, false, caller);
}

void *mt_probe_aligned(enum mt_call call, size_t align, size_t requested,
		       void *p, const void *caller)
{
	return alloc_slow(call, align, requested, p, true, caller);
}

void mt_probe_break_moved(void)
{
	mt_glibc_break_moved(mt_self());
}

__attribute__((noinline)) void *
mt_peak_then_return(struct mt_thread *t, int64_t live, void *p)
{
	mt_peak_check(t, live);
	return p;
}

/* Other allocators: their usable size costs a call, so a frame; kept out
 * of glibc's path, which needs none. */
__attribute__((noinline)) void *
mt_alloc_other(struct mt_thread *t, enum mt_call call, size_t requested,
	       void *p, const void *caller)
{
	/* (a malloc's block is of its size's class; the others' may not be:
	 * calloc may take a mapped block whole, an aligned one a larger) */
	size_t usable = call == MT_CALL_MALLOC && requested < MT_LARGE_BYTES
				? mt_size_class(requested, p)
				: 0;
	if (!usable)
		usable = mt_real.malloc_usable_size(p);
	mt_block_size_put(p, usable, false);
	if (__builtin_expect(usable < MT_LARGE_BYTES && !mt_is_loader_code(caller),
			     1))
		return mt_count_alloc_of(t, call, requested, p, usable, caller);
	return alloc_slow(call, 0, requested, p, true, caller);
}

/* What mt_alloc_traced leaves to a call: then counted. */
static __attribute__((noinline)) void *
alloc_traced_rest(struct mt_thread *t, enum mt_inline_left left,
		  enum mt_call call, size_t requested, void *p, size_t usable,
		  const void *caller)
{
	if (left == MT_INLINE_FLUSH)
		mt_trace_flush(t->trace);
	else
		mt_trace_alloc(t, call, 0, requested, p, usable);
	return mt_count_alloc_of(t, call, requested, p, usable, caller);
}

/* glibc with a trace: the event written inline, in a function of its own
 * so that the counting path keeps its small frame; it calls nothing in
 * its common case (the rest are tail calls), so it needs no frame either. */
static inline __attribute__((always_inline)) void *
alloc_traced(struct mt_thread *t, enum mt_call call, size_t requested, void *p,
	     const void *caller)
{
	size_t head = mt_chunk_head(p);
	size_t usable = mt_chunk_usable(head);
	if (__builtin_expect(!(head & MT_CHUNK_MMAPPED) && !mt_break_moved() &&
				     usable < MT_LARGE_BYTES,
			     1)) {
		enum mt_inline_left left =
			mt_trace_alloc_inline(t, call, requested, p, usable);
		if (__builtin_expect(left != MT_INLINE_DONE, 0))
			return alloc_traced_rest(t, left, call, requested, p,
						 usable, caller);
		return mt_count_alloc_of(t, call, requested, p, usable, caller);
	}
	return alloc_slow(call, 0, requested, p, true, caller);
}

__attribute__((noinline)) void *
mt_alloc_traced(struct mt_thread *t, enum mt_call call, size_t requested,
		void *p, const void *caller)
{
	return alloc_traced(t, call, requested, p, caller);
}

/* malloc's own copy, the entry a constant: most allocations are its. */
__attribute__((noinline)) void *
mt_malloc_traced(struct mt_thread *t, size_t requested, void *p,
		 const void *caller)
{
	return alloc_traced(t, MT_CALL_MALLOC, requested, p, caller);
}

void *mt_probe_alloc_slow(enum mt_call call, size_t requested, void *p,
			  const void *caller)
{
	return alloc_slow(call, 0, requested, p, true, caller);
}

static bool by_allocator(void)
{
	return mt_tls.sys_by_allocator;
}

/* A memory system call made while the shim does its own work (lttng-ust
 * emitting one of our events among it) is the shim's: set apart with its
 * raw calls, so that the kernel's totals less the shim's stay the
 * program's. */
static bool shim_work(int sys)
{
	if (__builtin_expect(mt_tls.hidden == 0, 1))
		return false;
	mt_shim_count(sys);
	return true;
}

void mt_probe_sys_entry(enum mt_call call, uint64_t addr, uint64_t len,
			uint64_t arg, int64_t result)
{
	if (mt_tls.hidden)
		return;
	struct mt_thread *t = mt_self();
	mt_count_sys_entry(&t->c, call, by_allocator());
	MT_EMIT(syscall, t, call, by_allocator(), addr, len, arg, result);
}

void mt_probe_sys(enum mt_sys sys, uint64_t bytes)
{
	mt_tls.sys_seen++;
	if (shim_work(sys))
		return;
	struct mt_thread *t = mt_self();
	mt_count_sys(&t->c, sys, bytes, by_allocator());
	if ((sys == MT_SYS_MMAP || sys == MT_SYS_MUNMAP) && bytes) {
		bool map = sys == MT_SYS_MMAP;
		if (mt_tls.site) /* the allocator's, for a large block */
			mt_site_credit(map ? MT_SITE_MMAP : MT_SITE_MUNMAP, bytes);
		else if (!by_allocator() && mt_sites_on)
			mt_site_own_mapping(map ? MT_SITE_OWN_MMAP : MT_SITE_OWN_MUNMAP,
					    bytes, mt_tls.sys_caller);
	}
	MT_EMIT(sys_count, t, sys, by_allocator(), bytes, 0);
}

void mt_probe_madvise(const void *addr, int advice, uint64_t bytes)
{
	mt_tls.sys_seen++;
	if (shim_work(MT_SYS_MADVISE))
		return;
	if (advice == MADV_HUGEPAGE)
		mt_rss_huge_advised();
	struct mt_thread *t = mt_self();
	mt_count_madvise(&t->c, advice, bytes, by_allocator());
	if ((advice == MADV_DONTNEED || advice == MADV_FREE) && by_allocator()) {
		if (mt_tls.in_calloc) {
			/* (whose it is, told once calloc returns) */
			uintptr_t lo = (uintptr_t)addr, hi = lo + bytes;
			if (!mt_tls.calloc_purges++ || lo < mt_tls.calloc_purge_lo)
				mt_tls.calloc_purge_lo = lo;
			if (hi > mt_tls.calloc_purge_hi)
				mt_tls.calloc_purge_hi = hi;
			mt_tls.calloc_purged += bytes;
		} else {
			mt_site_credit_purge(bytes);
		}
	} else if ((advice == MADV_DONTNEED || advice == MADV_FREE) && bytes) {
		uint64_t again = mt_own_purge_again((uintptr_t)addr, bytes);
		if (again) {
			mt_count_own_purge_again(&t->c, again);
			MT_EMIT_EVENT(t, own_purge_again, .bytes = again);
		}
		if (mt_sites_on)
			mt_site_own_mapping(MT_SITE_OWN_PURGE, bytes,
					    mt_tls.sys_caller);
	}
	MT_EMIT(sys_count, t, MT_SYS_MADVISE, by_allocator(), bytes, advice);
}

void mt_probe_calloc_done(const void *p, size_t total)
{
	/* (a decay purge that the call's tick set off covers other memory) */
	uintptr_t lo = (uintptr_t)p, hi = lo + total;
	if (p && mt_tls.calloc_purges && mt_tls.calloc_purge_lo < hi &&
	    mt_tls.calloc_purge_hi > lo) {
		mt_count_calloc_purges(&mt_self()->c, mt_tls.calloc_purges,
				       mt_tls.calloc_purged);
		/* The purge zeroed the block calloc returns: its site's, not
		 * those of the blocks freed before it (a frame buffer from
		 * malloc beside one from calloc had half of it; new-user
		 * trial 35).  The site is pending until the call is counted;
		 * a calloc not followed (not the program's, sites off) leaves
		 * them to the ledger, as before. */
		if (mt_tls.site)
			for (unsigned k = 0; k < mt_tls.calloc_purges; k++)
				mt_site_credit(MT_SITE_PURGE,
					       k ? 0 : mt_tls.calloc_purged);
		else
			mt_site_credit_purge(mt_tls.calloc_purged);
	} else if (mt_tls.calloc_purges) {
		mt_site_credit_purge(mt_tls.calloc_purged);
	}
	mt_tls.calloc_purges = 0;
	mt_tls.calloc_purged = 0;
	mt_tls.calloc_purge_hi = 0;
}

void mt_probe_brk(uintptr_t from, uintptr_t to)
{
	/* The shim's own (an allocator growing its heap for the shim's
	 * allocations): counted among the shim's calls, not the heap's moves,
	 * or the moves would outnumber the brk calls the program made. */
	if (mt_tls.hidden) {
		mt_glibc_break_set(to);
		return;
	}
	struct mt_thread *t = mt_self();
	mt_count_brk_move(&t->c, from, to);
	if (to != from)
		mt_site_credit(to > from ? MT_SITE_BRK_GROW : MT_SITE_BRK_SHRINK,
			       to > from ? to - from : from - to);
	mt_glibc_break_set(to);
	MT_EMIT(heap_move, t, from, to, 0);
}

uintptr_t mt_break_before(void)
{
	/* libc's record is right whenever libc's brk is the one in use;
	 * otherwise ask the kernel (a shim syscall, counted as such). */
	uintptr_t b = mt_libc_curbrk();
	return b ? b : mt_raw_brk_query();
}
