/* What is known of this process and its host (process_facts.c). */
#ifndef MEMTRACE_PROCESS_FACTS_H
#define MEMTRACE_PROCESS_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Read the command line (at start-up, and in a child after fork). */
void mt_process_read_argv(void);
/* The command line, as read: NULL-terminated. */
const char *const *mt_process_argv(void);
/* A path template: "%p" -> the pid, "%%" -> "%".  False if too long. */
bool mt_expand_path(const char *tmpl, char *out, size_t len);
/* The process's facts as JSON (docs/trace-format.md, "metadata") into buf:
 * its length, 0 when it does not fit.  parent: the pid it was forked
 * from, 0 if none. */
size_t mt_process_facts_json(char *buf, size_t len, pid_t parent);

#endif
