/* ascending_jobs [MIB] [ROUNDS]: jobs sorted by size, each buffer made at
 * its final size (1 MiB, 2 MiB, ... MIB MiB, default 32), written, read
 * and freed; ROUNDS times (default 4).  Nothing grows: the largest block is
 * one in MIB, but the most bytes (new-user trial 30). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long job(size_t bytes, int fill)
{
	unsigned char *p = malloc(bytes);
	if (!p) {
		perror("malloc");
		exit(1);
	}
	memset(p, fill, bytes);
	unsigned long sum = 0;
	for (size_t i = 0; i < bytes; i += 4096)
		sum += p[i];
	free(p);
	return sum;
}

int main(int argc, char **argv)
{
	size_t most = argc > 1 ? (size_t)atol(argv[1]) : 32;
	int rounds = argc > 2 ? atoi(argv[2]) : 4;
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++)
		for (size_t mib = 1; mib <= most; mib++)
			sum += job(mib << 20, (int)mib);
	printf("%lu\n", sum);
	return 0;
}
