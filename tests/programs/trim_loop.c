/* A program that gives its heap back itself each round: free never trims
 * (the trim threshold is set high), and malloc_trim(0) after each round's
 * frees gives the blocks' pages back, which the next round asks for again
 * and faults in anew.  `trim_loop [ROUNDS [trim-every]]`: with a second
 * argument, malloc_trim once in so many rounds. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCKS = 1024, BLOCK_BYTES = 8 << 10 };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	int every = argc > 2 ? atoi(argv[2]) : 1;
	static char *blocks[BLOCKS];
	unsigned long sum = 0;

	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < BLOCKS; i++) {
			blocks[i] = malloc(BLOCK_BYTES);
			if (!blocks[i])
				return 1;
			memset(blocks[i], r + i, BLOCK_BYTES);
		}
		for (int i = 0; i < BLOCKS; i++) {
			sum += (unsigned char)blocks[i][i];
			free(blocks[i]);
		}
		if (every > 0 && (r + 1) % every == 0)
			malloc_trim(0);
	}
	printf("rounds %d sum %lu\n", rounds, sum);
	return 0;
}
