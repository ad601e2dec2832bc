/* A zeroed table of 16 MiB made for each round, a few of its entries
 * used, and freed: an allocator that serves it from memory it used before
 * must zero all of it (glibc, once its mmap threshold rose past it, from
 * its heap), where fresh pages from the kernel are zero already and only
 * the few touched fault in.  `calloc_tables [ROUNDS [MIB [touch]]]`:
 * tables of MIB MiB (16); `touch`: an entry of every page of each is
 * read, then written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	long mib = argc > 2 ? atol(argv[2]) : 16;
	long ENTRIES = mib << 17; /* of 8 bytes */
	int touch = argc > 3 && strcmp(argv[3], "touch") == 0;
	long sum = 0;

	for (int r = 0; r < rounds; r++) {
		long *t = calloc(ENTRIES, sizeof *t); /* the table */
		if (!t)
			return 1;
		for (long k = 0; k < 8; k++)
			t[(k * 262139 + r) % ENTRIES] += k;
		/* (a load, then a store: an add to memory would fault once,
		 * as a write) */
		volatile long *v = t;
		for (long i = 0; touch && i < ENTRIES; i += 512) {
			long was = v[i];
			v[i] = was + i;
		}
		for (long k = 0; k < 8; k++)
			sum += t[(k * 262139 + r) % ENTRIES];
		free(t);
	}
	printf("rounds %d sum %ld\n", rounds, sum);
	return 0;
}
