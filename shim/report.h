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
/* The shim's start-up took this much CPU time (its constructor's) and
 * made so many page faults, part of what the summary says the shim cost. */
void mt_report_startup_took(double cpu_s, uint64_t faults);
/* In a child after fork: the same, for the child's own figures. */
void mt_report_restart_in_child(void);
/* This process forked a child (the fork handlers' parent side). */
void mt_report_forked(void);
/* At exit: the summary printed and written as asked; when events are
 * recorded, `closing` gets the closing record (the figures no event
 * carries, as JSON) to end the recording with. */
struct mt_closing;
void mt_report_at_exit(void (*closing)(const struct mt_closing *record));

#endif
