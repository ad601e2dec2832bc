/* LTTng-UST output: when MEMTRACE_LTTNG=1, every event also goes to the
 * memtrace tracepoint provider (libmemtrace-lttng.so), as a sink. */
#ifndef MEMTRACE_LTTNG_H
#define MEMTRACE_LTTNG_H

#include <stdbool.h>
#include <sys/types.h>

/* Load the provider and turn its sink on (at start-up, with the options
 * read).  Returns whether LTTng output is on; a missing provider gets one
 * warning. */
bool mt_lttng_start(void);
/* An LTTng trace has no file header: the same facts (process_facts.h)
 * are the process's first event, and again after fork and exec. */
void mt_lttng_announce(pid_t parent);
/* In the child of a fork: lttng-ust's own restart. */
void mt_lttng_after_fork_child(void);

#endif
