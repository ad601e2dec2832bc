/*
 * touch_then_churn [ROUNDS]: a working set touched once and kept (100 MiB),
 * then a 64 MiB scratch buffer allocated and freed each round, of which
 * each round touches 2 MiB.  glibc maps and unmaps the buffer every round
 * (above its largest mmap threshold): mmap churn, whose faults (512 a
 * round) are few beside the working set's first touches, so that the
 * run's faults stay near the pages it ever had resident.  explain says
 * the churn, and not also "first touch, not churn".
 */
#include <stdlib.h>
#include <string.h>

#define MIB (1024 * 1024)

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	char *kept = malloc(100 * MIB);
	if (!kept)
		return 1;
	memset(kept, 1, 100 * MIB);
	unsigned sum = 0;
	for (int r = 0; r < rounds; r++) {
		char *scratch = malloc(64 * MIB);
		if (!scratch)
			return 1;
		memset(scratch, r, 2 * MIB);
		__asm__ volatile("" : : "r"(scratch) : "memory");
		sum += (unsigned char)scratch[r];
		free(scratch);
	}
	sum += (unsigned char)kept[rounds];
	free(kept);
	return sum == 0 ? 2 : 0;
}
