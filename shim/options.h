/* MEMTRACE_* settings, read once from the environment at start-up. */
#ifndef MEMTRACE_OPTIONS_H
#define MEMTRACE_OPTIONS_H

#include <stdbool.h>
#include "visibility.h"

/* Small blocks' sites: one sampled in this many bytes allocated, on
 * average (MEMTRACE_SITES). */
#define MT_SMALL_SAMPLE_BYTES (512ul << 10)

struct mt_options {
	const char *backend;	  /* a known name or a library path */
	bool backend_explicit;	  /* MEMTRACE_BACKEND was given (and valid) */
	bool quiet;		  /* no summary on stderr */
	bool perf;		  /* use the kernel counters (perf_event_open) */
	const char *summary_path; /* JSON summary, "%p" = pid; NULL = none */
	const char *trace_path;	  /* MEMTRACE_OUT, "%p" = pid; NULL = none */
	bool force;		  /* overwrite an existing trace */
	bool compress;		  /* zstd chunks */
	unsigned fault_period;	  /* sample 1 fault in N; 0: none */
	bool lttng;		  /* events to LTTng-UST too (MEMTRACE_LTTNG) */
	bool sites;		  /* call sites of large blocks (sites.h) */
	unsigned long small_sample_bytes; /* and of small ones, one sampled in
					     so many bytes allocated; 0: none */
	bool small_sample_fixed;  /* that rate set (sample:BYTES), not
				     stepped up (small_sites.c) */
	unsigned rss_period_ms;	  /* resident memory sampled (rss.h); 0: not */
};

extern MT_HIDDEN struct mt_options mt_opt;

/* Fill `opt` from `get` (getenv, or a test's table).  Each bad value gets one
 * warning and the default; returns how many values were bad. */
int mt_options_parse(struct mt_options *opt,
		     const char *(*get)(const char *name));

/* Parse a boolean the way every MEMTRACE_* switch accepts it. */
bool mt_parse_bool(const char *s, bool *out);

#endif
