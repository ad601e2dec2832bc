/* A trace replayed into the counting-mode summary: the same counters, fed
 * by the recorded events through the same counting rules as the shim, so
 * that `memtrace stat FILE` equals the live summary of that run. */
#ifndef MEMTRACE_REPLAY_H
#define MEMTRACE_REPLAY_H

#include <stdbool.h>
#include <stdio.h>

#include "trace_read.h"

/* Replay the trace and write its summary as JSON (the MEMTRACE_SUMMARY
 * schema) into a new string.  NULL with err on failure. */
char *mt_replay_summary(struct mt_trace *t, bool salvage, char *err,
			size_t errlen);

#endif
