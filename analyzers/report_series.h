/* A recording's events as series over time, at most a screen's width of
 * points each, for the report's charts (report_page.c). */
#ifndef MEMTRACE_REPORT_SERIES_H
#define MEMTRACE_REPORT_SERIES_H

#include <jansson.h>
#include <stdbool.h>

#include "trace_read.h"

/* The most points a series keeps: more events than this are gathered
 * into as many intervals (the page says so). */
#define MT_REPORT_POINTS 1500

/* One pass over t: a JSON object of series, each [[seconds, value], ...]:
 *   anon_bytes, file_bytes, live_bytes   resident memory samples (rss)
 *   heap_bytes                           the program break above its start
 *   syscalls: {brk, mmap, munmap, mremap, madvise}   calls per interval
 *   faults                               fault samples per interval
 *   regions: [[start, end, name], ...]   calls of each region
 *   seconds, events, intervals           the time span, events read, and
 *                                        the width of an interval (s)
 * NULL with err on failure. */
json_t *mt_report_series(struct mt_trace *t, char *err, size_t errlen);

#endif
