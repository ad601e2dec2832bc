/* Where in the code: the call sites of large blocks (MT_LARGE_BYTES or
 * more, the blocks glibc may map or take from the top of its heap), and
 * what the allocator did to the kernel on their account.
 *
 * A site is the Python frames of the allocating thread (innermost first)
 * and the address that called the allocator (its stack as written has the
 * native frames between its Python ones too: mixed_stack.h).  While a large block is
 * allocated or freed, its site is the thread's current one, and the
 * memory system calls the allocator makes then (the heap grown or
 * trimmed, a chunk mapped or unmapped, pages purged, a thread's heap
 * shrunk) are credited to it.  An allocator other than glibc's makes
 * its calls inside malloc, before the block and so its site are known:
 * they are held (MT_SITE_PENDING) until the block's site is found.
 * realloc's are credited to the block's site after the call: the caller's
 * when it grows the block (the code that asked for more), the site the
 * block had when it shrinks or keeps its size (a buffer trimmed to its
 * contents, as io.BytesIO's getvalue does, is still the buffer its writes
 * grew).  Calls made elsewhere (the allocator's deferred work, small
 * blocks) are credited to no site.  The program's
 * own mappings (files, an interpreter's arenas) are credited to the site
 * of the code that maps or unmaps them. */
#ifndef MEMTRACE_SITES_H
#define MEMTRACE_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "thread.h"
#include "visibility.h"

/* What a site is credited with. */
enum mt_site_cause {
	MT_SITE_BRK_GROW,
	MT_SITE_BRK_SHRINK,
	MT_SITE_MMAP,
	MT_SITE_MUNMAP,
	MT_SITE_PURGE,		   /* madvise MADV_DONTNEED or MADV_FREE */
	MT_SITE_THREAD_HEAP_SHRINK, /* glibc's thread arenas */
	MT_SITE_OWN_MMAP,	   /* the program's own mmap, not the allocator's */
	MT_SITE_OWN_MUNMAP,
	MT_SITE_OWN_PURGE,	   /* the program's own MADV_DONTNEED or FREE */
	MT_SITE_CAUSES
};
_Static_assert(MT_SITE_CAUSES <= sizeof mt_tls.pending_count / sizeof mt_tls.pending_count[0],
	       "mt_tls holds a pending count for each cause");

/* mt_tls.site while an allocation of a large block is inside the
 * allocator: what it does to the kernel is held for the block's site. */
#define MT_SITE_PENDING (~0u)

extern MT_HIDDEN bool mt_sites_on;

void mt_sites_init(void);
/* A large block p was allocated by code that returns to `caller` (by
 * realloc: `resized`): its site becomes the thread's current one (until
 * mt_site_done). */
void mt_site_alloc(const void *p, size_t requested, size_t usable,
		   const void *caller, bool resized);
/* The large block p is about to be freed by the call that returns to
 * `caller` (NULL: not known): the same, and the site notes where its
 * blocks are given back. */
void mt_site_free(const void *p, const void *caller);
void mt_site_done(void);
/* The program is about to ask the allocator for n bytes: when a large
 * block, what the allocator does meanwhile is held for its site
 * (mt_site_alloc, mt_site_realloc), or dropped (mt_site_pending_drop). */
static inline void mt_site_expect(size_t n)
{
	if (__builtin_expect(n >= MT_LARGE_BYTES, 0) && mt_sites_on &&
	    !mt_tls.site && !mt_tls.in_sites)
		mt_tls.site = MT_SITE_PENDING;
}
/* No block came of it (a failure, a small one): what was held is no
 * site's. */
void mt_site_pending_drop_slow(void);
static inline void mt_site_pending_drop(void)
{
	if (__builtin_expect(mt_tls.site == MT_SITE_PENDING, 0))
		mt_site_pending_drop_slow();
}
/* realloc gave up the block old (large, or p is) for p of `usable` bytes
 * (NULL: freed), called from caller.  The thread's current site becomes
 * p's when realloc grew the block (found at caller, as mt_site_alloc),
 * else old's, which p keeps when it is large; what the allocator did
 * inside the call is credited to it.  Returns p's site when p is followed
 * (its block_site event is the caller's to emit, after realloc's). */
unsigned mt_site_realloc(const void *old, const void *p, size_t requested,
			 size_t usable, const void *caller);
/* A small block p was sampled (small_sites.c), standing for `stands_for`
 * bytes allocated: credited to the site of the code there. */
void mt_site_sample(const void *p, size_t usable, const void *caller,
		    double stands_for);
/* Small blocks are sampled every sample_bytes on average from now (0:
 * none); `fixed`: at that rate throughout, else sparser as each thread's
 * samples accumulate (small_sites.c). */
void mt_small_sites_start(uint64_t sample_bytes, bool fixed);
/* The sparsest rate a thread of this process has sampled at (the rate
 * set, when none stepped up). */
uint64_t mt_small_sites_rate_max(void);
/* In a child after fork: none stepped up. */
void mt_small_sites_reset_after_fork(void);
/* The program itself (not the allocator) mapped or unmapped `bytes`, from
 * code that returns to caller: credited to the site there. */
void mt_site_own_mapping(enum mt_site_cause cause, uint64_t bytes,
			 const void *caller);
/* glibc's free of the thread's current site's block in the heap of
 * `arena` (a thread arena, or MT_MAIN_HEAP) left the heap as it was: the
 * block goes into the heap's ledger.  When a free shrinks a heap by
 * `bytes` (`cause`: a thread heap's shrink, or the main heap's trim), the
 * bytes are shared by the blocks of the ledger and the one freed, if
 * large, by their bytes; the shrink is counted on the one that set it
 * off. */
#define MT_MAIN_HEAP ((const void *)1)
void mt_site_freed_in_arena(const void *arena);
void mt_site_credit_heap_shrink(const void *arena, enum mt_site_cause cause,
				uint64_t bytes);
/* The allocator purged `bytes` (madvise DONTNEED or FREE).  glibc's (a
 * malloc_trim) is the current site's, if any; another allocator's is
 * deferred work of its frees: shared by the large blocks' sites in
 * proportion to the bytes they freed and no purge has yet been credited
 * (mimalloc purges inside the next task's first malloc). */
void mt_site_credit_purge(uint64_t bytes);
/* The allocator did `cause` to `bytes` of memory: credited to the
 * thread's current site, if any. */
void mt_site_credit_slow(enum mt_site_cause cause, uint64_t bytes);
static inline void mt_site_credit(enum mt_site_cause cause, uint64_t bytes)
{
	if (__builtin_expect(mt_tls.site != 0, 0))
		mt_site_credit_slow(cause, bytes);
}
/* The sites as a JSON array into buf, heaviest first (the memory moved on
 * their account and their blocks' bytes), as many as fit, the rest summed
 * into a last one; its length, 0 if none could be written.  Without
 * `wait`, 0 when another thread holds the tables (a fatal signal's
 * handler must not wait for it).
 * With `nodes` (the trace's), the same sites, their stacks as a tree,
 * each node written once: {"nodes": [the nodes after *nodes], "sites":
 * [each with the "node" of its innermost frame]}, and *nodes becomes the
 * last node written (docs/trace-format.md, the sites event); len then
 * MT_SITES_TRACE_BYTES. */
#define MT_SITES_JSON_BYTES (24 << 10)
#define MT_SITES_TRACE_BYTES (2 * MT_SITES_JSON_BYTES)
size_t mt_sites_json(char *buf, size_t len, bool wait, unsigned *nodes);
/* How often the sites changed so far: unchanged, nothing to write out. */
uint64_t mt_sites_changes(void);
/* How many sites the tables hold (a new one: a stack to write out). */
unsigned mt_sites_known(void);
/* In a child after fork: its figures start from zero. */
void mt_sites_reset_after_fork(void);
/* A seccomp filter is about to be installed (lifecycle.h): the sites make
 * no system call of their own from here on. */
void mt_sites_sandboxed(void);

#endif
