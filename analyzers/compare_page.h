/* memtrace compare --html: the side-by-side table and each backend's
 * charts on the same axes, in one self-contained page (compare_page.c). */
#ifndef MEMTRACE_COMPARE_PAGE_H
#define MEMTRACE_COMPARE_PAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* runs: [{"backend", "summary", "series"}, ...] (report_series.h), one
 * recorded run per backend; table: compare's text.  False with a message
 * naming the problem. */
bool mt_compare_page(FILE *out, const char *table, json_t *runs,
		     const char *chartjs);

#endif
