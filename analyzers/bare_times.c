#include <stdio.h>
#include <sys/time.h>
#include <time.h>

#include "bare_times.h"
#include "launch.h"

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

size_t mt_bare_repeat(struct mt_bare_times *t, size_t nb, long repeat,
		      char *const argv[], struct mt_ending ending, int stdout_fd)
{
	size_t counted = 0;
	for (long r = 0; r < repeat; r++)
		for (size_t i = 0; i < nb; i++) {
			struct mt_bare_times *b = &t[i];
			struct rusage u;
			struct mt_launch l = {.backend = b->backend, .bare = true,
					      .env = b->env,
					      .usage = &u, .stdout_fd = stdout_fd,
					      /* (its messages were shown with
					       * the runs under the shim) */
					      .stderr_fd = stdout_fd};
			pid_t child;
			bool signaled;
			double start = now_s();
			if (b->n == MT_MAX_RUNS ||
			    mt_launch_wait(&l, argv, &child, &signaled) !=
				    ending.status ||
			    signaled != ending.signaled)
				continue;
			b->wall_s[b->n] = now_s() - start;
			b->user_s[b->n] = seconds(u.ru_utime);
			b->cpu_s[b->n++] = seconds(u.ru_utime) + seconds(u.ru_stime);
			counted++;
		}
	return counted;
}

int mt_bare_fastest(const struct mt_bare_times *t)
{
	int best = -1;
	for (size_t i = 0; i < t->n; i++)
		if (best < 0 || t->cpu_s[i] < t->cpu_s[best])
			best = (int)i;
	return best;
}

static double median_of(const double *x, size_t n)
{
	double v[MT_MAX_RUNS];
	for (size_t i = 0; i < n; i++) {
		size_t j = i; /* (a few: insertion) */
		for (; j > 0 && v[j - 1] > x[i]; j--)
			v[j] = v[j - 1];
		v[j] = x[i];
	}
	return mt_median_of_sorted(v, n);
}

double mt_bare_median(const struct mt_bare_times *t)
{
	return median_of(t->cpu_s, t->n);
}

double mt_bare_wall_median(const struct mt_bare_times *t)
{
	return median_of(t->wall_s, t->n);
}

double mt_bare_wall_least(const struct mt_bare_times *t)
{
	double least = 0;
	for (size_t i = 0; i < t->n; i++)
		if (i == 0 || t->wall_s[i] < least)
			least = t->wall_s[i];
	return least;
}
