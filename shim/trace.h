/* The native trace, a sink (sink.h): every event into a per-thread
 * buffer, written out in whole, checksummed chunks (docs/trace-format.md).
 * On when MEMTRACE_OUT names a file. */
#ifndef MEMTRACE_TRACE_H
#define MEMTRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sink.h"
#include "visibility.h"

extern MT_HIDDEN const struct mt_sink mt_trace_sink;

/* Open the trace file (at start-up, with the options read): false when
 * none is asked for or it cannot be. */
bool mt_trace_start(void);
/* In a child after fork: a file of its own (false: none). */
bool mt_trace_restart_in_child(pid_t parent);

/* What the glibc fast path (probe.h) leaves to a call: the events of
 * trace_buf.h when the buffer is not warm. */
void mt_trace_alloc(struct mt_thread *t, int entry, size_t align,
		    size_t size, const void *p, size_t usable);
void mt_trace_free(struct mt_thread *t, const void *p, size_t usable);

/* The closing record about to be written is a signal's that ends the
 * process (lifecycle.c), which the status says in place of exit. */
void mt_trace_ended_by(int sig);
/* The same for _exit(status), which writes the summary as exit does. */
void mt_trace_ended_by_exit_now(int status);
/* exit's status, which the status record says (before the closing
 * record; else -1). */
void mt_trace_exit_status(int status);

#endif
