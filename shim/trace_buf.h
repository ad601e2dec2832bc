/* A thread's trace buffer, and the events of the malloc+free fast path
 * written into it inline: the part of the trace writer that runs on every
 * call (trace.c has the rest).  Inline because a call and its frame cost
 * as much here as the encoding itself. */
#ifndef MEMTRACE_TRACE_BUF_H
#define MEMTRACE_TRACE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#else
#include <time.h>
#endif

#include "memtrace/trace_format.h"
#include "owned_lock.h"
#include "thread.h"
#include "varint.h"

enum {
	MT_CHUNK_BYTES = 64 * 1024,
	MT_EVENT_MAX = 4096, /* room for the largest event */
};
/* A chunk older than this is written out at the thread's next event, so a
 * killed process loses at most about this much.  1e8 TSC ticks is at
 * most 100 ms on any TSC of 1 GHz or more. */
#define MT_AGE_UNITS (100000000ull >> MT_TSC_SHIFT)

/* A buffer's committed word has this bit while its owner writes an event
 * into it or writes it out.  A signal handler that interrupts the owner
 * then sees it, on the fast path as on the slow one, and puts its events
 * in the thread's second buffer (trace.c): never into the event being
 * written, never waiting for a lock its own thread holds. */
#define MT_BUSY (1ull << 63)

struct mt_trace_buf {
	mt_owned_lock lock; /* while the chunk is written out */
	bool closed;	  /* no more events (exit, fork); then it is empty */
	bool in_signal;	  /* the thread's second buffer, for signal handlers */
	uint32_t tid, seq;
	/* The chunk's length in bytes | its events << 32, one word so that a
	 * writer on another thread (at exit) reads both at once; | MT_BUSY */
	uint64_t committed;
	uint64_t on_disk; /* what of it a provisional chunk holds (trace.c) */
	/* Where that provisional chunk is in the file, and its size (0:
	 * none). */
	uint64_t provisional_at, provisional_len;
	uint64_t first_tsc, first_ns;
	/* The previous event's time in units of 2^MT_TSC_SHIFT ticks (the
	 * TSC shifted: each event's dt is one subtraction), and the time past
	 * which the chunk is written out (first_tsc's units + MT_AGE_UNITS). */
	uint64_t last_units, due_units;
	uintptr_t last_addr;
	/* The chunk's previous counters: each snapshot is stored as the
	 * change from it (from zero at a chunk's start). */
	uint64_t last_counters[MT_COUNTERS_VALUES];
	uint64_t last_sample_ns; /* the chunk's previous kernel sample */
	unsigned char data[MT_CHUNK_BYTES + MT_EVENT_MAX];
};

static inline uint64_t mt_ticks(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* Write the buffer's events out as one chunk, and start the next. */
void mt_trace_flush(struct mt_trace_buf *b);

/* Mark b busy if its committed word is still c (not busy), in one
 * instruction: a signal handler on this thread runs before it or after
 * it, never in between, and so cannot add an event the owner would then
 * write over.  No lock prefix: only the owner writes the word while the
 * process runs.  The mark is in place before anything of the event is
 * written. */
static inline __attribute__((always_inline)) bool
mt_buf_claim_if(struct mt_trace_buf *b, uint64_t c)
{
#if defined(__x86_64__)
	uint64_t seen = c;
	__asm__ volatile("cmpxchgq %2, %1"
			 : "+a"(seen), "+m"(b->committed)
			 : "r"(c | MT_BUSY)
			 : "cc");
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return seen == c;
#else
	return __atomic_compare_exchange_n(&b->committed, &c, c | MT_BUSY, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

/* The same, whatever the word holds: its value then (MT_BUSY when it was
 * busy already, and then b is not claimed). */
static inline uint64_t mt_buf_claim(struct mt_trace_buf *b)
{
	uint64_t c = __atomic_load_n(&b->committed, __ATOMIC_RELAXED);
	while (!(c & MT_BUSY) && !mt_buf_claim_if(b, c))
		c = __atomic_load_n(&b->committed, __ATOMIC_RELAXED);
	return c & MT_BUSY ? MT_BUSY : c;
}

/* Start an event at p in a chunk whose time base is set (it holds an
 * event): its tag, and its time as a delta from the previous event (a
 * small one in the tag byte). */
static inline __attribute__((always_inline)) unsigned char *
mt_event_begin_at(struct mt_trace_buf *b, unsigned char *p, int tag,
		  uint64_t now)
{
	uint64_t units = now >> MT_TSC_SHIFT;
	uint64_t dt = units - b->last_units;
	int low = tag < MT_TAG_EXTENDED ? tag : 0;
	b->last_units = units;
	*p++ = (unsigned char)(low | (dt < MT_DT_INLINE ? dt + 1 : 0) << MT_TAG_BITS);
	if (!low)
		*p++ = (unsigned char)tag;
	return dt < MT_DT_INLINE ? p : mt_put_varint(p, dt);
}

static inline __attribute__((always_inline)) unsigned char *
mt_event_begin(struct mt_trace_buf *b, int tag, uint64_t now)
{
	return mt_event_begin_at(b, b->data + (uint32_t)b->committed, tag, now);
}

/* The event written from `start` ends at p; `c` is the committed word
 * read before it, not busy (the fast path keeps it: no second load after
 * its byte stores); storing the next one ends the claim.  True when the
 * chunk is due to be written out. */
static inline __attribute__((always_inline)) bool
mt_event_commit_from(struct mt_trace_buf *b, uint64_t c, unsigned char *start,
		     unsigned char *p)
{
	uint64_t next = c + ((uint64_t)1 << 32) + (uint64_t)(p - start);
	__atomic_store_n(&b->committed, next, __ATOMIC_RELEASE);
	return __builtin_expect((uint32_t)next >= MT_CHUNK_BYTES ||
					b->last_units > b->due_units,
				0);
}

static inline __attribute__((always_inline)) void
mt_event_end(struct mt_trace_buf *b, unsigned char *p)
{
	uint64_t c = b->committed & ~MT_BUSY;
	if (mt_event_commit_from(b, c, b->data + (uint32_t)c, p))
		mt_trace_flush(b);
}

static inline __attribute__((always_inline)) unsigned char *
mt_put_addr(struct mt_trace_buf *b, unsigned char *p, const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	p = mt_put_varint(p, mt_zigzag((int64_t)(a - b->last_addr)));
	b->last_addr = a;
	return p;
}

/* An inline event can go to a buffer that holds an event already and is
 * not busy: its committed word, read by the owner, is above 0 as a signed
 * number (a closed buffer is always empty).  Otherwise (and with LTTng
 * on, which takes the slow path) the out-of-line mt_trace_* functions do
 * the rest.  Returns that word, claimed, or 0. */
static inline __attribute__((always_inline)) uint64_t
mt_warm_claim(struct mt_trace_buf *b)
{
	uint64_t c = b ? __atomic_load_n(&b->committed, __ATOMIC_RELAXED) : 0;
	/* (A handler that wrote in between: the slow path.) */
	if (__builtin_expect((int64_t)c <= 0 || !mt_buf_claim_if(b, c), 0))
		return 0;
	return c;
}

/* The two events of the malloc+free fast path, at time `now`, into a
 * buffer whose chunk has its time base and whose committed word was `c`.
 * True when the chunk is due to be written out. */
static inline __attribute__((always_inline)) bool
mt_alloc_event(struct mt_trace_buf *b, uint64_t c, uint64_t now,
	       uint64_t entry_align, size_t size, const void *p, size_t usable)
{
	unsigned char *start = b->data + (uint32_t)c;
	unsigned char *q;
	if (entry_align == MT_CALL_MALLOC) {
		q = mt_event_begin_at(b, start, MT_EV_MALLOC, now);
	} else {
		q = mt_event_begin_at(b, start, MT_EV_ALLOC, now);
		q = mt_put_varint(q, entry_align);
	}
	q = mt_put_varint(q, size);
	q = mt_put_addr(b, q, p);
	q = mt_put_varint(q, mt_zigzag((int64_t)(usable - size)));
	return mt_event_commit_from(b, c, start, q);
}

static inline __attribute__((always_inline)) bool
mt_free_event(struct mt_trace_buf *b, uint64_t c, uint64_t now, const void *p,
	      size_t usable)
{
	unsigned char *start = b->data + (uint32_t)c;
	unsigned char *q = mt_event_begin_at(b, start, MT_EV_FREE, now);
	q = mt_put_addr(b, q, p);
	q = mt_put_varint(q, usable);
	return mt_event_commit_from(b, c, start, q);
}

/* The fast path's events, inline when the thread's buffer is warm: the
 * common case then makes no call, so the functions that write them need
 * no frame.  What is left, for an out-of-line function to do: */
enum mt_inline_left {
	MT_INLINE_DONE,
	MT_INLINE_FLUSH, /* written; the chunk is due (mt_trace_flush) */
	MT_INLINE_COLD,	 /* not written: the out-of-line mt_trace_* must */
};

/* The fast path reads the TSC for one event in MT_CLOCK_EVERY of a chunk
 * (by its count of events, in the committed word c); the others take the
 * time of the one before (dt 0).  A read cost 4-10 ns here, a third of
 * what an event costs; the events between two reads are some tens of
 * nanoseconds apart, finer than any analysis looks (region times are
 * their own clock's, the kernel's samples carry theirs).  But a large
 * block's events always read it: a fault sampled inside the block is
 * put on its site by its time against theirs (analyzers/fault_sites.c),
 * and a free stamped before the faults of its block's last touch would
 * lose them. */
#define MT_CLOCK_EVERY 8

static inline __attribute__((always_inline)) uint64_t
mt_fast_ticks(const struct mt_trace_buf *b, uint64_t c, size_t usable)
{
	if ((c >> 32) & (MT_CLOCK_EVERY - 1) && usable < MT_LARGE_BYTES)
		return b->last_units << MT_TSC_SHIFT;
	return mt_ticks();
}

/* A small allocation without alignment (the fast path's). */
static inline __attribute__((always_inline)) enum mt_inline_left
mt_trace_alloc_inline(struct mt_thread *t, int entry, size_t size,
		      const void *p, size_t usable)
{
	struct mt_trace_buf *b = t->trace;
	uint64_t c = mt_warm_claim(b);
	if (__builtin_expect(!c, 0))
		return MT_INLINE_COLD;
	return mt_alloc_event(b, c, mt_fast_ticks(b, c, usable), (uint64_t)entry, size, p,
			      usable)
		       ? MT_INLINE_FLUSH
		       : MT_INLINE_DONE;
}

static inline __attribute__((always_inline)) enum mt_inline_left
mt_trace_free_inline(struct mt_thread *t, const void *p, size_t usable)
{
	struct mt_trace_buf *b = t->trace;
	uint64_t c = mt_warm_claim(b);
	if (__builtin_expect(!c, 0))
		return MT_INLINE_COLD;
	return mt_free_event(b, c, mt_fast_ticks(b, c, usable), p, usable) ? MT_INLINE_FLUSH
							 : MT_INLINE_DONE;
}

#endif
