/* The exit summary: gathered from every thread's counters and getrusage,
 * printed to stderr and written as JSON. */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include <stdbool.h>

/* At start-up: remember the command line and the start time, and open the
 * kernel counters (saying what is missing when `announce`). */
void mt_report_start(bool announce);
/* In a child after fork: the same, for the child's own figures. */
void mt_report_restart_in_child(void);
void mt_report_at_exit(void);

#endif
