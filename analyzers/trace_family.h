/* The files beside a native trace that the rest of its command wrote: its
 * process's forked children (at any depth) and later images (after exec)
 * record into files of their own, PATH.<pid> and PATH.<n> or
 * PATH.<pid>.<n> (docs/trace-format.md).  Read with the trace, as
 * `explain -- CMD` reads every process's summary. */
#ifndef MEMTRACE_TRACE_FAMILY_H
#define MEMTRACE_TRACE_FAMILY_H

/* The paths of those files whose process is the trace's own (a later
 * image) or descends from it (each header's pid and parent_pid), in the
 * order their names sort; NULL-terminated, NULL when there are none. */
char **mt_trace_family(const char *path);
void mt_trace_family_free(char **paths);

#endif
