/* `holes ROUNDS`: each round allocates 400,000 small blocks (64 to 112
 * bytes), frees every other one, allocates 40 blocks of 96 KiB and
 * touches them whole, frees those, then the rest of the small ones.  On
 * jemalloc the process faults some 8,000 pages a round, more than it ever
 * holds, and purges in between, but the faults are not the purges': with
 * purging off they stay, and its memory grows tenfold (new-user trial
 * 21). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SMALL = 400000, BIG = 40, BIG_BYTES = 96 * 1024 };

static char *small[SMALL];

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 25;
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < SMALL; i++) {
			small[i] = malloc(64 + (i % 4) * 16);
			if (!small[i])
				return 1;
			small[i][0] = (char)i;
		}
		for (int i = 0; i < SMALL; i += 2)
			free(small[i]);
		char *big[BIG];
		for (int j = 0; j < BIG; j++) {
			big[j] = malloc(BIG_BYTES);
			if (!big[j])
				return 1;
			memset(big[j], j, BIG_BYTES);
		}
		for (int j = 0; j < BIG; j++) {
			sum += (unsigned char)big[j][100];
			free(big[j]);
		}
		for (int i = 1; i < SMALL; i += 2) {
			sum += (unsigned char)small[i][0];
			free(small[i]);
		}
	}
	printf("sum=%lu\n", sum);
	return 0;
}
