/* Several runs of a command under one backend, and perhaps a setting:
 * what compare sets side by side, and what explain reasons about and
 * verifies its fixes with.  Each run is mt_measure's (measure.h). */
#ifndef MEMTRACE_RUNS_H
#define MEMTRACE_RUNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "figures.h"

enum { MT_MAX_RUNS = 64 };

struct mt_runs {
	const char *backend;
	json_t *summaries[MT_MAX_RUNS]; /* the command's own, one per run */
	size_t n;
	/* the summaries of the processes it started (forked, or exec'd
	 * after a fork), of its first run: an array, or NULL */
	json_t *children;
};

/* How a run ended: its exit status, or (signaled) 128 + the signal that
 * ended it. */
struct mt_ending {
	int status;
	bool signaled;
};

/* One more run of argv under r's backend, with `setting` (NAME=VALUE, or
 * NULL) in its environment and its output to stdout_fd.  False when it
 * failed: then `failure` says how ("'CMD' failed under B with S (exit
 * status 1)").  A run fails when a signal ends it (but a signal that asks
 * a program to end, SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGALRM or SIGUSR1/2,
 * that its first run ended by too), or when it exits with
 * another status than the command's first run without a setting did
 * (which is said once when it is not 0). */
bool mt_runs_add(struct mt_runs *r, char *const argv[], const char *setting,
		 int stdout_fd, char *failure, size_t len);
/* How the command itself ends (its first run's without a setting; exit
 * status 0 before it ran). */
struct mt_ending mt_runs_command_ending(void);
/* argv `repeat` times under each of the nb backends of b, interleaved
 * (b[0], b[1], ..., b[0], b[1], ...), with `setting` and stdout_fd as for
 * mt_runs_add.  Each failure is said on stderr ("memtrace: VERB: ...");
 * with `progress`, a line there says how far it is.  Returns how many
 * runs failed. */
int mt_runs_repeat(struct mt_runs *b, size_t nb, long repeat,
		   char *const argv[], const char *setting, int stdout_fd,
		   const char *verb, bool progress);
/* The median of n values sorted, the mean of the middle two of an even
 * number; 0 of none. */
static inline double mt_median_of_sorted(const double *v, size_t n)
{
	return !n ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The run whose CPU time (user and system) is the median of r's, the
 * lower of the middle two: where a run's figures must agree with each
 * other (its totals with its sites), they come from that one run. */
size_t mt_runs_median(const struct mt_runs *r);
/* The least CPU time (user and system) of r's runs, the command's own
 * process's; 0 with none. */
double mt_runs_least_cpu(const struct mt_runs *r);
/* The figures of `region` combined over the runs (mt_figures_combine);
 * false when no run has it. */
bool mt_runs_figures(const struct mt_runs *r, const char *region,
		     struct mt_call_figures *out);
void mt_runs_release(struct mt_runs *r);

#endif
