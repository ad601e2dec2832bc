/* A program that sets glibc's mmap threshold itself, below its blocks:
 * each 256 KiB buffer is mapped, filled and unmapped, round after round.
 * A GLIBC_TUNABLES setting cannot move the threshold back (mallopt comes
 * after it).  `mallopt_churn [ROUNDS]` */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	unsigned long sum = 0;

	mallopt(M_MMAP_THRESHOLD, 64 << 10);
	for (int r = 0; r < rounds; r++) {
		unsigned char *p = malloc(256 << 10);
		if (!p)
			return 1;
		memset(p, r, 256 << 10);
		sum += p[r % (256 << 10)];
		free(p);
	}
	printf("rounds %d sum %lu\n", rounds, sum);
	return 0;
}
