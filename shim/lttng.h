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
/* Around fork: what liblttng-ust-fork.so would do (lifecycle.c calls
 * them), so the child registers as a process of its own. */
void mt_lttng_fork_prepare(void);
void mt_lttng_fork_parent(void);
void mt_lttng_fork_child(void);

#endif
