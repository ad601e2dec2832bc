/* Blocks the dynamic loader allocated (a thread's DTV, TLS blocks of
 * dlopen'ed modules, link maps), with their usable sizes, on backends
 * whose sizes cost a call to the allocator.
 *
 * The loader frees such blocks where the allocator must not be asked
 * anything: in a thread's teardown, after its TSD destructors ran
 * (__nptl_free_tcb frees the DTVs of dead threads' cached stacks).
 * jemalloc's malloc_usable_size there registers a thread that never used
 * jemalloc as a live one, which it never unregisters, and its list of
 * threads points into a stack glibc later unmaps.  So the size of a block
 * the loader frees comes from here, and the allocator only sees the free,
 * as it would without the shim. */
#ifndef MEMTRACE_LOADER_BLOCKS_H
#define MEMTRACE_LOADER_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_HIDDEN __attribute__((visibility("hidden")))

extern MT_HIDDEN uintptr_t mt_loader_lo, mt_loader_hi;
/* Whether the allocator's lookup must not be asked of the loader's blocks
 * (jemalloc's, above): then they are kept here.  Until the allocator is
 * known, they are; never on glibc, whose sizes are read inline. */
extern MT_HIDDEN bool mt_loader_blocks_kept;

/* Is pc in the dynamic loader (ld.so)? */
static inline bool mt_is_loader_code(const void *pc)
{
	return (uintptr_t)pc - mt_loader_lo < mt_loader_hi - mt_loader_lo;
}

/* A block the loader got, of `usable` bytes. */
void mt_loader_block_add(const void *p, size_t usable);
/* Its usable size, forgotten; 0 for a block the shim never counted (made
 * before it started). */
size_t mt_loader_block_take(const void *p);
/* In a child after fork: the lock may have been held by a thread that is
 * not there. */
void mt_loader_blocks_after_fork(void);

#endif
