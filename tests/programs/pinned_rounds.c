/* Rounds of 200,000 small blocks made and freed, with one block of 100 KB
 * made in the first round and kept for the run above them.  On jemalloc
 * the freed pages are purged and faulted in again each round; with
 * purging off (its decay times at -1) they are never given back, and the
 * process grows by some 40 MB a round instead.  `pinned_rounds [ROUNDS]` */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCKS = 200000, BLOCK_BYTES = 200 };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	static char *blocks[BLOCKS];
	char *kept = NULL;
	long sum = 0;

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < BLOCKS; i++) {
			blocks[i] = malloc(BLOCK_BYTES);
			if (!blocks[i])
				return 1;
			memset(blocks[i], i, BLOCK_BYTES);
		}
		if (!kept) {
			kept = malloc(100000); /* lives all run */
			if (!kept)
				return 1;
			memset(kept, 1, 100000);
		}
		for (int i = 0; i < BLOCKS; i++) {
			sum += blocks[i][5];
			free(blocks[i]);
		}
	}
	printf("rounds %d sum %ld kept %d\n", rounds, sum, kept ? kept[5] : 0);
	return 0;
}
