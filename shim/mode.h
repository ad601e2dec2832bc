/* What the shim does with the events it sees: which sinks are on, and so
 * which fast path the hot functions take.  The one owner of that mode;
 * the sinks are turned on and off here, nowhere else. */
#ifndef MEMTRACE_MODE_H
#define MEMTRACE_MODE_H

#include <stdbool.h>

#include "visibility.h"

struct mt_sink;

enum mt_sink_id {
	MT_SINK_TRACE, /* the native trace file (trace.c) */
	MT_SINK_LTTNG, /* LTTng-UST tracepoints (lttng.c) */
	MT_SINK_COUNT
};

/* The sinks on, by id (NULL: off); read by emit.h. */
extern MT_HIDDEN const struct mt_sink *mt_sinks[MT_SINK_COUNT];
/* Any sink on: events are recorded, not only counted. */
extern MT_HIDDEN bool mt_tracing;

/* True when malloc is glibc's and its chunk headers give usable sizes
 * (set once, when the symbols are resolved). */
extern MT_HIDDEN bool mt_glibc_chunks;
/* And it fills each block it hands out (MALLOC_PERTURB_, or the
 * glibc.malloc.perturb tunable): a large block's pages are resident
 * before its malloc returns. */
extern MT_HIDDEN bool mt_glibc_fills_blocks;

/* Which fast path the hot functions may take: one byte to test. */
enum mt_fast_path {
	MT_FAST_NONE = 0,
	MT_FAST_GLIBC = 1,
	MT_FAST_OTHER = 2,
	MT_FAST_GLIBC_TRACING = 3, /* glibc, each event inline into the trace */
	MT_FAST_OTHER_TRACING = 6, /* jemalloc, tcmalloc or mimalloc
				      (block_sizes.h), each event inline
				      into the trace */
};
extern MT_HIDDEN unsigned char mt_fast;

/* Both glibc paths (bit 0): glibc's malloc never calls its own entry
 * points through the PLT. */
static inline bool mt_fast_is_glibc(unsigned char fast)
{
	return fast & 1;
}

/* Set mt_fast from the allocator and the sinks on. */
void mt_fast_update(void);

/* Turn a sink on or off.  mt_sink_off returns whether it was on, so
 * that of two threads stopping it, one says so. */
void mt_sink_on(enum mt_sink_id id, const struct mt_sink *sink);
bool mt_sink_off(enum mt_sink_id id);

#endif
