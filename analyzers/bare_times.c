#include <stdio.h>
#include <sys/time.h>

#include "bare_times.h"
#include "launch.h"

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
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
			if (b->n == MT_MAX_RUNS ||
			    mt_launch_wait(&l, argv, &child, &signaled) !=
				    ending.status ||
			    signaled != ending.signaled)
				continue;
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

double mt_bare_median(const struct mt_bare_times *t)
{
	double v[MT_MAX_RUNS];
	for (size_t i = 0; i < t->n; i++) {
		size_t j = i; /* (a few: insertion) */
		for (; j > 0 && v[j - 1] > t->cpu_s[i]; j--)
			v[j] = v[j - 1];
		v[j] = t->cpu_s[i];
	}
	return mt_median_of_sorted(v, t->n);
}
