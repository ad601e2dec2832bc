/* memtrace report's page: one self-contained HTML file (report_page.c). */
#ifndef MEMTRACE_REPORT_PAGE_H
#define MEMTRACE_REPORT_PAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Where Debian's libjs-chart.js puts the library the page inlines. */
#define MT_CHARTJS "/usr/share/javascript/chart.js/chart.min.js"

/* Write the page: the run (from summary), the findings, the regions, and
 * the charts of series (report_series.h), with Chart.js read from chartjs
 * and inlined (nothing is loaded from the network).  False with a message
 * naming the problem. */
bool mt_report_page(FILE *out, json_t *summary, json_t *findings,
		    json_t *series, const char *chartjs);

/* A page as both commands write it: its head, Chart.js inlined, `data`
 * as JSON in <script id="data">, then the page's own script, inside a
 * <script> that has shown any script error in <div id="errors"> and put
 * the data in D.  False with
 * a message naming `who` and the problem. */
bool mt_page_write(FILE *out, const char *who, const char *page_head,
		   json_t *data, const char *page_script, const char *chartjs);

#endif
