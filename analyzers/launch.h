/* Starting a command under libmemtrace.so with a chosen backend. */
#ifndef MEMTRACE_LAUNCH_H
#define MEMTRACE_LAUNCH_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

struct mt_launch {
	const char *backend; /* NULL: glibc, not forced */
	const char *summary; /* MEMTRACE_SUMMARY, or NULL */
	const char *trace;   /* MEMTRACE_OUT, or NULL */
	bool force, compress; /* MEMTRACE_FORCE, MEMTRACE_COMPRESS */
	bool quiet;
	bool lttng;	     /* MEMTRACE_LTTNG: events to LTTng-UST too */
	char *const *env;    /* more NAME=VALUE settings, or NULL (bare too) */
	int stdout_fd, stderr_fd; /* the command's, or -1 for ours */
	/* mt_launch_wait: when not NULL, the command's memory syscalls
	 * from its exec on, counted by the kernel (exec_counts.h) */
	struct mt_exec_counts *exec_counts;
	/* No shim: the backend's library alone preloaded and no setting of
	 * ours, so that the command's time is its own (bare_times.h). */
	bool bare;
	/* mt_launch_wait: when not NULL, the child's resource usage (and
	 * that of the children it waited for), as wait4 tells it */
	struct rusage *usage;
};

struct mt_exec_counts;

#define MT_LAUNCH_DEFAULTS .stdout_fd = -1, .stderr_fd = -1

/* Is everything there to run l: the shim, the backend?  On a problem
 * prints one message and returns false. */
bool mt_launch_check(const struct mt_launch *l);

/* Replace this process with argv under the shim (LD_PRELOAD with the shim
 * first and the backend after it).  Returns only on failure, with the
 * message printed; the caller exits 127. */
void mt_launch_exec(const struct mt_launch *l, char *const argv[]);

/* Run argv as a child the same way and wait; returns its exit status in
 * the shell's convention (128 + signal when killed, and then *signaled is
 * set, when not NULL), or 127 if it could not start. */
int mt_launch_wait(const struct mt_launch *l, char *const argv[], pid_t *child,
		   bool *signaled);

#endif
