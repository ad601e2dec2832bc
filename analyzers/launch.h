/* Starting a command under libmemtrace.so with a chosen backend. */
#ifndef MEMTRACE_LAUNCH_H
#define MEMTRACE_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

struct mt_launch {
	const char *backend; /* NULL: glibc, not forced */
	const char *summary; /* MEMTRACE_SUMMARY, or NULL */
	bool quiet;
};

/* Checks the backend and prepares the environment (LD_PRELOAD with the
 * shim first and the backend after it).  On a problem prints one message
 * and returns false. */
bool mt_launch_prepare(const struct mt_launch *l);

/* Replace this process with argv (after mt_launch_prepare).  Returns only
 * on failure, with the message printed; the caller exits 127. */
void mt_launch_exec(char *const argv[]);

/* Run argv as a child and wait; returns its exit status in the shell's
 * convention (128 + signal when killed), or 127 if it could not start. */
int mt_launch_wait(char *const argv[], pid_t *child);

#endif
