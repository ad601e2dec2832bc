/* LTTng-UST output: when MEMTRACE_LTTNG=1, every trace event also goes to
 * the memtrace tracepoint provider (libmemtrace-lttng.so). */
#ifndef MEMTRACE_LTTNG_H
#define MEMTRACE_LTTNG_H

#include "lttng_sink.h"
#include "visibility.h"

/* The loaded provider's sink; NULL when LTTng output is off. */
extern MT_HIDDEN const struct mt_lttng_sink *mt_lttng;

/* Load the provider (at start-up, with the options read).  Returns whether
 * LTTng output is on; a missing provider gets one warning. */
bool mt_lttng_start(void);

/* In the child of a fork: lttng-ust's own restart. */
void mt_lttng_after_fork_child(void);

#endif
