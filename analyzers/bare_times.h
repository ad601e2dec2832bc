/* The command's time on a backend without the shim: what explain's
 * allocator-time compares.  The shim's cost per call is not the same on
 * every allocator (a C++ program of small blocks: +5 ns a pair on glibc,
 * +28 on jemalloc), and a tight loop's figure, which the shim's own
 * estimate rests on, is a third of what a real program feels; measured
 * bare, the comparison is the program's and the allocators' alone. */
#ifndef MEMTRACE_BARE_TIMES_H
#define MEMTRACE_BARE_TIMES_H

#include <stdbool.h>
#include <stddef.h>

#include "runs.h"

struct mt_bare_times {
	const char *backend;
	char *const *env; /* NAME=VALUE settings of the runs, or NULL */
	double cpu_s[MT_MAX_RUNS];  /* user + system, each run */
	double user_s[MT_MAX_RUNS];
	double wall_s[MT_MAX_RUNS]; /* start to exit */
	size_t n;
};

/* argv `repeat` times on each of the nb backends of t, interleaved, the
 * output to stdout_fd; a run that ends otherwise than `ending` is not
 * counted.  Returns how many runs were counted. */
size_t mt_bare_repeat(struct mt_bare_times *t, size_t nb, long repeat,
		      char *const argv[], struct mt_ending ending,
		      int stdout_fd);
/* The run of least CPU (its index), or -1 when there is none. */
int mt_bare_fastest(const struct mt_bare_times *t);
/* The median CPU (of an even number of runs, the mean of the middle
 * two), or 0 with no run. */
double mt_bare_median(const struct mt_bare_times *t);
/* The same of the runs' wall times, and the least (0 with no run). */
double mt_bare_wall_median(const struct mt_bare_times *t);
double mt_bare_wall_least(const struct mt_bare_times *t);

#endif
