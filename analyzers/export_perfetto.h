/* A recording as a Perfetto trace (export_perfetto.c). */
#ifndef MEMTRACE_EXPORT_PERFETTO_H
#define MEMTRACE_EXPORT_PERFETTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "trace_read.h"

/* Writes t to out as Perfetto's protobuf trace (a stream of TracePacket):
 * a track per thread with its regions' calls as slices and each memory
 * syscall as an instant event with its arguments; counter tracks for the
 * heap's size (the program break), resident and live memory, and page
 * faults (samples).  summary: the replayed summary (the process's pid and
 * command).  False with err. */
bool mt_export_perfetto(FILE *out, struct mt_trace *t, json_t *summary,
			char *err, size_t errlen);

#endif
