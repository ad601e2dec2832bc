/* What the interposers report: each describes one call that happened.
 * Counting mode is the only sink so far; these are where a trace writer
 * will hook in. */
#ifndef MEMTRACE_PROBE_H
#define MEMTRACE_PROBE_H

#include <stdint.h>

#include "symbols.h"
#include "thread.h"

static inline size_t mt_usable(void *p)
{
	return p ? mt_real.malloc_usable_size(p) : 0;
}

/* An allocation entry returned p (NULL on failure). */
static inline void mt_probe_alloc(enum mt_call call, size_t requested, void *p)
{
	struct mt_thread *t = mt_self();
	mt_count_alloc(&t->c, call, requested, mt_usable(p));
	mt_live_grew(t);
}

/* p is about to be freed (or reallocated): counted before the real call,
 * while its size can still be read and before another thread can reuse it. */
static inline void mt_probe_release(void *p)
{
	mt_count_free(&mt_self()->c, mt_usable(p));
}

static inline void mt_probe_call(enum mt_call call)
{
	mt_count_call(&mt_self()->c, call);
}

/* Memory system calls.  Each kernel call is counted once, by the innermost
 * interposer it passed: a libc-style wrapper (mmap, sbrk) counts it only if
 * no syscall() below it already did, which is how tcmalloc's own mmap and
 * sbrk reach the kernel.  mt_sys_mark() is taken before the real call. */
static inline unsigned mt_sys_mark(void)
{
	return mt_tls.sys_seen;
}

static inline bool mt_sys_counted_since(unsigned mark)
{
	return mt_tls.sys_seen != mark;
}

/* A call of mmap, sbrk, syscall, ... (whether or not it reached the
 * kernel). */
void mt_probe_sys_entry(enum mt_call call);
void mt_probe_sys(enum mt_sys sys, uint64_t bytes);
void mt_probe_madvise(int advice, uint64_t bytes);
/* The program break moved from `from` to `to` (equal: no move). */
void mt_probe_brk(uintptr_t from, uintptr_t to);
/* The program break before a brk whose caller does not report it. */
uintptr_t mt_break_before(void);

#endif
