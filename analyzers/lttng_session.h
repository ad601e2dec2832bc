/* memtrace run --lttng: a command run under the shim inside an LTTng
 * session that records the memtrace tracepoints. */
#ifndef MEMTRACE_LTTNG_SESSION_H
#define MEMTRACE_LTTNG_SESSION_H

#include "launch.h"

/* Create a session writing to dir (NULL: $LTTNG_HOME or $HOME, under
 * lttng-traces/), start it, run argv, stop and destroy it.  Starts a session
 * daemon if none runs.  Returns argv's exit status, or non-zero with a
 * message when LTTng cannot record. */
int mt_lttng_run(const struct mt_launch *l, const char *dir,
		 char *const argv[]);

#endif
