/* The memory system calls of a command from its exec on, as strace -f
 * counts them: kernel counters opened by memtrace on the child before it
 * execs (perf's enable_on_exec, inherited by its threads and children).
 * The shim's own counters start later, once the loader has mapped the
 * libraries and the shim is initialised: the difference is what happened
 * before them. */
#ifndef MEMTRACE_EXEC_COUNTS_H
#define MEMTRACE_EXEC_COUNTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memtrace/events.h"

struct mt_exec_counts {
	int fd[MT_SYS_COUNT]; /* -1: not counted */
	bool valid;	      /* every one counted and read */
	uint64_t n[MT_SYS_COUNT];
};

/* Open the counters on `child`, which has not exec'd yet. */
void mt_exec_counts_open(struct mt_exec_counts *c, pid_t child);
/* After the child is reaped: the totals (valid when all were read). */
void mt_exec_counts_read(struct mt_exec_counts *c);

#endif
