/* What each way of timing an event costs here, per read, in a loop that
 * uses each value (as a trace writer does: a delta from the last event):
 * the clocks a trace could stamp its events with (issue 16, item 2).
 *
 *   clock_cost [--iterations N]
 *
 * Prints one line per clock: ns_per_read, and its resolution as the
 * smallest nonzero step between two reads.  Minimum of 7 rounds. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static uint64_t ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static uint64_t tsc(void)
{
	return __rdtsc();
}

static uint64_t tsc_ordered(void)
{
	/* (rdtscp waits for the instructions before it to finish) */
	unsigned aux;
	return __rdtscp(&aux);
}

static uint64_t tsc_fenced(void)
{
	_mm_lfence();
	return __rdtsc();
}
#endif

static uint64_t monotonic(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

static uint64_t monotonic_coarse(void)
{
	return ns_of(CLOCK_MONOTONIC_COARSE);
}

/* A value another thread would refresh (a shared coarse clock): a load. */
static volatile uint64_t shared_time = 1;
static uint64_t shared_load(void)
{
	return shared_time;
}

struct clock_way {
	const char *name;
	uint64_t (*read)(void);
	const char *unit;
};

/* Where the values' sum goes, so that no read is left out. */
static volatile uint64_t sink;

static double ns_per_read(uint64_t (*read)(void), uint64_t n, uint64_t *step)
{
	uint64_t last = read(), acc = 0, smallest = UINT64_MAX;
	uint64_t start = ns_of(CLOCK_MONOTONIC);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t now = read();
		uint64_t d = now - last;
		if (d && d < smallest)
			smallest = d;
		acc += d; /* (each value used) */
		last = now;
	}
	uint64_t ns = ns_of(CLOCK_MONOTONIC) - start;
	*step = smallest == UINT64_MAX ? 0 : smallest;
	sink = acc;
	return (double)ns / (double)n;
}

int main(int argc, char **argv)
{
	uint64_t n = 20000000;
	if (argc > 2 && strcmp(argv[1], "--iterations") == 0)
		n = strtoull(argv[2], NULL, 10);
	const struct clock_way ways[] = {
#if defined(__x86_64__)
		{"rdtsc", tsc, "ticks"},
		{"rdtscp", tsc_ordered, "ticks"},
		{"lfence+rdtsc", tsc_fenced, "ticks"},
#endif
		{"CLOCK_MONOTONIC", monotonic, "ns"},
		{"CLOCK_MONOTONIC_COARSE", monotonic_coarse, "ns"},
		{"shared load", shared_load, "-"},
	};
	for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
		double best = 1e9;
		uint64_t step = 0;
		for (int r = 0; r < 7; r++) {
			double v = ns_per_read(ways[w].read, n, &step);
			if (v < best)
				best = v;
		}
		printf("clock=%s ns_per_read=%.2f step=%llu unit=%s\n",
		       ways[w].name, best, (unsigned long long)step, ways[w].unit);
	}
	return 0;
}
