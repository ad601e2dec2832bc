/* The exit summary: gathered from every thread's counters and getrusage,
 * printed to stderr and written as JSON. */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

/* At start-up (and in a forked child): remember the command line and
 * the start time. */
void mt_report_start(void);
void mt_report_at_exit(void);

#endif
