/* The exit summary: gathered from every thread's counters and getrusage,
 * printed to stderr and written as JSON. */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At start-up: remember the command line and the start time, and open the
 * kernel counters (saying what is missing when `announce`). */
void mt_report_start(bool announce);
/* In a child after fork: the same, for the child's own figures. */
void mt_report_restart_in_child(void);
void mt_report_at_exit(void);
/* The shim's own syscalls of kind sys since the kernel counters opened. */
uint64_t mt_report_shim_since_open(int sys);
/* The command line, read at start-up. */
const char *const *mt_report_command(void);
/* A path template: "%p" -> the pid, "%%" -> "%".  False if too long. */
bool mt_expand_path(const char *tmpl, char *out, size_t len);

#endif
