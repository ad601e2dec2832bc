/* A zeroed table of 16 MiB made for each round, a few of its entries
 * used, and freed: an allocator that serves it from memory it used before
 * must zero all of it (glibc, once its mmap threshold rose past it, from
 * its heap), where fresh pages from the kernel are zero already and only
 * the few touched fault in.  `calloc_tables [ROUNDS]` */
#include <stdio.h>
#include <stdlib.h>

enum { ENTRIES = 2 << 20 }; /* of 8 bytes: 16 MiB */

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	long sum = 0;

	for (int r = 0; r < rounds; r++) {
		long *t = calloc(ENTRIES, sizeof *t); /* the table */
		if (!t)
			return 1;
		for (long k = 0; k < 8; k++)
			t[(k * 262139 + r) % ENTRIES] += k;
		for (long k = 0; k < 8; k++)
			sum += t[(k * 262139 + r) % ENTRIES];
		free(t);
	}
	printf("rounds %d sum %ld\n", rounds, sum);
	return 0;
}
