/* Tracepoint ids from tracefs, wherever it is mounted: one lookup for the
 * shim's counters and samplers, memtrace-hold and the CLI's exec counts. */
#ifndef MEMTRACE_TRACEFS_H
#define MEMTRACE_TRACEFS_H

/* The id of CATEGORY:EVENT (syscalls:sys_enter_brk, ...), or -1.  Where
 * err is not NULL and no id was read, *err is set to why (the errno of
 * the first failure other than ENOENT, else ENOENT), unless already set. */
long mt_tracefs_id(const char *category, const char *event, int *err);

#endif
