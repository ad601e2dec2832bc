/* The call sites of a recording as a pprof profile (export_pprof.c). */
#ifndef MEMTRACE_EXPORT_PPROF_H
#define MEMTRACE_EXPORT_PPROF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Write summary's sites (symbolized) to path as a gzipped profile.proto,
 * for pprof, speedscope and Perfetto.  False with err. */
bool mt_export_pprof(const char *path, json_t *summary, char *err, size_t errlen);

#endif
