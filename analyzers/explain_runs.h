/* What explain measured on each backend, and the findings it keeps: what
 * its verb (cmd_explain.c) and allocator-time (allocator_time.c) share. */
#ifndef MEMTRACE_EXPLAIN_RUNS_H
#define MEMTRACE_EXPLAIN_RUNS_H

#include <stdbool.h>
#include <stddef.h>

#include "bare_times.h"
#include "explain.h"
#include "figures.h"
#include "runs.h"

/* Figures of each region under one backend: one run, or several combined. */
struct measured {
	struct mt_runs runs;
	const char *source;  /* the file read, or NULL for runs made here */
	const char *partial; /* a partial trace: why (owned by runs[0]) */
};

/* The findings of every backend and process, in the order found. */
struct findings {
	struct mt_finding **at;
	size_t n, cap;
};

/* x added to f, which owns it from then; false when there is no room. */
bool mt_findings_keep(struct findings *f, struct mt_finding *x);

/* Is id a rule of memory given back and taken again (a churn)? */
bool mt_churn_finding(const char *id);

/* A backend's CPU: its least over the whole runs, that run's user time,
 * and the median. */
struct mt_cpu_view {
	double least, user, median;
	size_t runs; /* the runs the median is of */
};

/* From the runs without the shim (bare_times.h), or where there are none
 * (summaries read), from the runs under it, each less the shim's own
 * estimated time; f: the fastest run's figures.  False without a whole
 * run. */
bool mt_cpu_view_of(const struct measured *m, const struct mt_bare_times *bare,
		    struct mt_call_figures *f, struct mt_cpu_view *out);

/* A backend measured here, and the least CPU time of its whole runs
 * (mt_cpu_view_of), or NULL. */
const struct measured *mt_measured_on(const struct measured *m,
				      const struct mt_bare_times *bare,
				      int nm, const char *b, double *time_s);

#endif
