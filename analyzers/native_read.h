/* The native trace file as a source (source.h). */
#ifndef MEMTRACE_NATIVE_READ_H
#define MEMTRACE_NATIVE_READ_H

#include <stddef.h>

#include "source.h"

/* Open and check the file header; pid: the process it must be of (0:
 * any).  On failure NULL, with a message in err naming the file offset
 * and what was expected. */
struct mt_trace *mt_native_open(const char *path, long pid, char *err,
				size_t errlen);
/* A trace in memory (the fuzz target's entry point). */
struct mt_trace *mt_native_from_memory(const void *data, size_t len,
				       char *err, size_t errlen);

#endif
