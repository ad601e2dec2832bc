/* A trace's summary as the text the shim writes (MEMTRACE_SUMMARY), and
 * what its recording lacks: what stat, report, export and explain read. */
#ifndef MEMTRACE_REPLAY_JSON_H
#define MEMTRACE_REPLAY_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "trace_read.h"

/* Replay the trace and write its summary as JSON (the MEMTRACE_SUMMARY
 * schema, and the "partial" keys of recording.h) into a new string.
 * NULL with err on failure. */
char *mt_replay_summary(struct mt_trace *t, bool salvage, char *err,
			size_t errlen);

#endif
