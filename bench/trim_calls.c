/* malloc_trim(0) in a tight loop on a small heap: what the shim adds to a
 * call that has nothing to give back (bench/trim_cost.py).
 *
 *   trim_calls [CALLS]
 *
 * Prints ns_per_call. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 20000;
	void *kept[100];
	for (int i = 0; i < 100; i++)
		kept[i] = malloc(1000);
	double start = now_ns();
	for (long i = 0; i < calls; i++)
		malloc_trim(0);
	printf("ns_per_call=%.1f\n", (now_ns() - start) / (double)calls);
	for (int i = 0; i < 100; i++)
		free(kept[i]);
	return 0;
}
