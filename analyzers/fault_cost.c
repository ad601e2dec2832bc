#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "fault_cost.h"

enum { BYTES = 32 << 20, HUGE_PAGE = 2 << 20, TRIES = 3 };

static double thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long faults_so_far(void)
{
	struct rusage u;
	getrusage(RUSAGE_THREAD, &u);
	return u.ru_minflt;
}

/* One fresh mapping touched a page at a time: CPU time per fault (the
 * stores themselves are nothing beside the faults). */
static double one_try(bool huge)
{
	size_t len = BYTES + HUGE_PAGE;
	char *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 0;
	char *p = (char *)(((uintptr_t)map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	madvise(p, BYTES, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	long f0 = faults_so_far();
	double t0 = thread_cpu_s();
	for (size_t i = 0; i < BYTES; i += 4096)
		((volatile char *)p)[i] = 1;
	double t = thread_cpu_s() - t0;
	long n = faults_so_far() - f0;
	munmap(map, len);
	return n > 0 ? t / (double)n : 0;
}

/* The least and the most of the tries. */
static void measured(bool huge, double *least, double *most)
{
	*least = *most = 0;
	for (int i = 0; i < TRIES; i++) {
		double c = one_try(huge);
		if (c > 0 && (*least == 0 || c < *least))
			*least = c;
		if (c > *most)
			*most = c;
	}
}

/* MEMTRACE_FAULT_COST_US=SMALL[,HUGE]: what a fault costs, set (a huge
 * page's as a 4 KiB page's where HUGE is not given). */
static double given_s(bool huge)
{
	const char *given = getenv("MEMTRACE_FAULT_COST_US");
	if (!given || !*given)
		return -1;
	char *end;
	double us = strtod(given, &end);
	if (*end == ',') {
		double huge_us = strtod(end + 1, &end);
		if (huge)
			us = huge_us;
	}
	return !*end && us > 0 ? us / 1e6 : 0;
}

static double cost[2][2] = {{-1, -1}, {-1, -1}}; /* [huge][most] */

static double cost_of(bool huge, bool most)
{
	double given = given_s(huge);
	if (given >= 0)
		return given;
	if (cost[huge][0] < 0)
		measured(huge, &cost[huge][0], &cost[huge][1]);
	return cost[huge][most];
}

double mt_fault_cost_s(bool huge)
{
	return cost_of(huge, false);
}

double mt_fault_cost_most_s(bool huge)
{
	return cost_of(huge, true);
}
