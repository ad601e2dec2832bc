#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "copy_cost.h"

enum { BYTES = 64 << 20, TRIES = 3 };

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Seconds a byte of memcpy (or of memset, `zero`) takes.  Both buffers
 * written first, so that the copies take no page fault: those a program's
 * copies take are counted apart, as faults. */
static double measured(bool zero)
{
	char *from = mmap(NULL, 2 * (size_t)BYTES, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (from == MAP_FAILED)
		return 0;
	char *to = from + BYTES;
	memset(from, 1, 2 * (size_t)BYTES);
	double best = 0;
	for (int i = 0; i < TRIES; i++) {
		double t0 = now_s();
		if (zero)
			memset(to, 0, BYTES);
		else
			memcpy(to, from, BYTES);
		__asm__ volatile("" : : "r"(to) : "memory");
		double t = (now_s() - t0) / BYTES;
		if (t > 0 && (best == 0 || t < best))
			best = t;
	}
	munmap(from, 2 * (size_t)BYTES);
	return best;
}

/* The cost `variable` sets (nanoseconds), or the one measured once. */
static double cost_of(const char *variable, double *cached, bool zero)
{
	const char *given = getenv(variable);
	if (given && *given) {
		char *end;
		double ns = strtod(given, &end);
		return !*end && ns > 0 ? ns / 1e9 : 0;
	}
	if (*cached < 0)
		*cached = measured(zero);
	return *cached;
}

double mt_copy_cost_s(void)
{
	static double cost = -1;
	return cost_of("MEMTRACE_COPY_COST_NS", &cost, false);
}

double mt_zero_cost_s(void)
{
	static double cost = -1;
	return cost_of("MEMTRACE_ZERO_COST_NS", &cost, true);
}
