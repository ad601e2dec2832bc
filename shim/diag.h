/* Diagnostics from inside the traced process: formatted into a stack buffer
 * and written with one raw write(2) to stderr, errno preserved. */
#ifndef MEMTRACE_DIAG_H
#define MEMTRACE_DIAG_H

#include <stdarg.h>

/* Remember which file stderr is (see diag.c): first thing at start-up. */
void mt_diag_start(void);

/* "memtrace: warning: ..." (at most a few dozen per process). */
void mt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "memtrace: ..." without the warning tag, for the exit summary. */
void mt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "memtrace: error: ..." then _exit(127): for the few cases where running on
 * would mislead (the allocator asked for cannot be loaded). */
void mt_fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#endif
