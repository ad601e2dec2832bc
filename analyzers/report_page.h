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

/* What both pages share: a file inlined as a <script> (a message naming
 * `who` when it cannot be read), and text written inside a <script>
 * ("</" escaped, which would end it). */
bool mt_page_inline_script(FILE *out, const char *path, const char *who);
bool mt_page_script_text(FILE *out, const char *s);

#endif
