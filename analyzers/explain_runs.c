#include <stdlib.h>
#include <string.h>

#include "explain_runs.h"

bool mt_findings_keep(struct findings *f, struct mt_finding *x)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct mt_finding **more = realloc(f->at, cap * sizeof *more);
		if (!more)
			return false;
		f->at = more;
		f->cap = cap;
	}
	f->at[f->n++] = x;
	return true;
}

bool mt_churn_finding(const char *id)
{
	static const char *const churns[] = {"heap-trim-churn", "mmap-churn",
					     "purge-churn", "thread-heap-churn"};
	for (size_t i = 0; i < sizeof churns / sizeof *churns; i++)
		if (!strcmp(id, churns[i]))
			return true;
	return false;
}

/* A run's CPU time less the shim's own, estimated (it costs some
 * backends more per call than others). */
static double own_cpu(const struct mt_call_figures *f)
{
	double cpu = f->user_s + f->system_s;
	return f->shim_known && f->shim_s < cpu ? cpu - f->shim_s : cpu;
}

/* The whole-run figures of the run that took the least CPU: what the
 * backend costs, where other jobs slow some runs (the median of three
 * put tcmalloc 36% faster in one explain and 20% in the next, for a
 * program it runs 36% faster bare every time; new-user trial 5). */
static bool fastest_run(const struct mt_runs *r, struct mt_call_figures *out)
{
	bool found = false;
	for (size_t i = 0; i < r->n; i++) {
		struct mt_call_figures f;
		if (mt_figures_of(r->summaries[i], MT_WHOLE_PROGRAM, &f) &&
		    (!found || own_cpu(&f) < own_cpu(out))) {
			*out = f;
			found = true;
		}
	}
	return found;
}

/* The median CPU of r's whole runs (less the shim's own): a slow spell
 * of the machine in one run of three or more does not move it.  Of an
 * even number, the mean of the middle two: the lower of them made two
 * runs' median their least, and their spread 0 (new-user trial 29). */
static double median_cpu(const struct mt_runs *r, size_t *runs)
{
	double v[MT_MAX_RUNS];
	size_t n = 0;
	for (size_t i = 0; i < r->n && n < MT_MAX_RUNS; i++) {
		struct mt_call_figures f;
		if (mt_figures_of(r->summaries[i], MT_WHOLE_PROGRAM, &f))
			v[n++] = own_cpu(&f);
	}
	for (size_t i = 1; i < n; i++) /* (a few: insertion) */
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	*runs = n;
	return mt_median_of_sorted(v, n);
}

/* A backend's CPU time over its runs: the least (and that run's user
 * time) and the median. */
/* From the runs without the shim (bare_times.h), or where there are none
 * (summaries read), from the runs under it, each less the shim's own
 * estimated time. */
bool mt_cpu_view_of(const struct measured *m, const struct mt_bare_times *bare,
			struct mt_call_figures *f, struct mt_cpu_view *out)
{
	if (!fastest_run(&m->runs, f))
		return false;
	if (!bare) {
		size_t runs;
		double median = median_cpu(&m->runs, &runs);
		*out = (struct mt_cpu_view){own_cpu(f), f->user_s, median, runs};
		return true;
	}
	int i = mt_bare_fastest(bare);
	if (i < 0)
		return false;
	*out = (struct mt_cpu_view){bare->cpu_s[i], bare->user_s[i],
				 mt_bare_median(bare), bare->n};
	return true;
}

/* A backend measured here, and the least CPU time of its whole runs:
 * without the shim where it was timed so (bare), else under it, less the
 * shim's estimated own.  CPU, not wall time: a busy machine doubled some
 * runs' wall time and a backend was proposed on it (new-user trial 11). */
const struct measured *mt_measured_on(const struct measured *m,
					  const struct mt_bare_times *bare,
					  int nm, const char *b, double *time_s)
{
	for (int j = 0; j < nm; j++) {
		struct mt_call_figures f;
		struct mt_cpu_view v;
		if (!m[j].source && !strcmp(m[j].runs.backend, b) &&
		    mt_cpu_view_of(&m[j], bare ? &bare[j] : NULL, &f, &v)) {
			*time_s = v.least;
			return &m[j];
		}
	}
	return NULL;
}
