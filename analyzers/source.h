/* A source of events: what each reader (native_read.c, ctf_read.c)
 * implements, and the front (trace_read.c) calls.  A source's struct
 * starts with a struct mt_trace whose ops are its own. */
#ifndef MEMTRACE_SOURCE_H
#define MEMTRACE_SOURCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "memtrace/trace_format.h"

struct mt_trace;

struct mt_source_ops {
	/* What `skipped` counts, in words: one of them, and more. */
	const char *skipped_one, *skipped_what;
	void (*close)(struct mt_trace *t);
	json_t *(*metadata)(struct mt_trace *t);
	bool (*each)(struct mt_trace *t, bool salvage,
		     bool (*fn)(const struct mt_event *, void *), void *arg,
		     char *err, size_t errlen);
	uint64_t (*start_ns)(const struct mt_trace *t);
	uint64_t (*skipped)(const struct mt_trace *t);
	/* What a source may not have: NULL. */
	const char *(*note)(struct mt_trace *t);
	bool (*status)(const struct mt_trace *t, struct mt_trace_status *out,
		       bool *damaged);
	uint64_t (*truncated)(const struct mt_trace *t);
	uint64_t (*unwritten)(const struct mt_trace *t, uint64_t *first);
};

struct mt_trace {
	const struct mt_source_ops *ops;
	bool salvage; /* mt_trace_salvage */
};

#endif
