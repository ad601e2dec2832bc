/* `small_sites ROUNDS`: two functions allocate small blocks, one three
 * times the bytes of the other (nodes: 3 x 40,000 blocks of 96 B; names:
 * 40,000 of 96 B), and both are freed each round; no block is large.
 * Which code the small blocks come from, by their bytes: 75% nodes, 25%
 * names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 40000, SIZE = 96 };

static void *blocks[4 * COUNT];

static __attribute__((noinline)) void nodes(void **out)
{
	for (int i = 0; i < 3 * COUNT; i++) {
		out[i] = malloc(SIZE);
		memset(out[i], i, SIZE);
	}
}

static __attribute__((noinline)) void names(void **out)
{
	for (int i = 0; i < COUNT; i++) {
		out[i] = malloc(SIZE);
		memset(out[i], i, SIZE);
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++) {
		nodes(blocks);
		names(blocks + 3 * COUNT);
		for (int i = 0; i < 4 * COUNT; i += 97)
			sum += ((unsigned char *)blocks[i])[r % SIZE];
		for (int i = 0; i < 4 * COUNT; i++)
			free(blocks[i]);
	}
	printf("%lu\n", sum);
	return 0;
}
