/* Rounds of 200,000 small blocks made and freed, with one block of 100 KB
 * made in the first round and kept for the run above them.  On jemalloc
 * the freed pages are purged and faulted in again each round; with
 * purging off (its decay times at -1) they are never given back, and the
 * process grows by some 40 MB a round instead.  On glibc the kept block
 * pins the top of the heap: free never trims it, but with `trim` the
 * program calls malloc_trim(0) after each round, which gives the free
 * pages below it back (madvise), to be faulted in again by the next.
 * `pinned_rounds [ROUNDS [trim]]` */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCKS = 200000, BLOCK_BYTES = 200 };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	int trim = argc > 2 && strcmp(argv[2], "trim") == 0;
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
		if (trim)
			malloc_trim(0);
	}
	printf("rounds %d sum %ld kept %d\n", rounds, sum, kept ? kept[5] : 0);
	return 0;
}
