/* `tiny_pairs N [SPIN_MS]`: N malloc(16)+free pairs, nothing else (the
 * most the shim's own time can weigh in a run), then SPIN_MS milliseconds
 * of arithmetic without a call (the least). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	double spin = argc > 2 ? atof(argv[2]) : 0;
	for (long i = 0; i < n; i++) {
		char *p = malloc(16);
		__asm__ volatile("" : : "r"(p) : "memory");
		if (!p)
			return 1;
		*(volatile char *)p = (char)i;
		free(p);
	}
	double until = cpu_ms() + spin;
	unsigned long x = 1;
	while (spin > 0 && cpu_ms() < until)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	printf("%lu\n", x & 1);
	return 0;
}
