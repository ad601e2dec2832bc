/*
 * size_churn ROUNDS: pages that change size class under the shim's map of
 * block sizes (shim/block_sizes.h).  Each round allocates 4,000 blocks of
 * one size, frees them in a scattered order, then the next round's size
 * reuses those pages for another class; among them, blocks of the aligned
 * family (mimalloc gives those interior addresses of a bigger block),
 * calloc'ed ones, realloc chains and C++-sized mid blocks.  Everything is
 * freed before exit, so the bytes the shim counts freed must equal the
 * bytes it counts allocated: a size read wrong leaves live bytes behind.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>

#define BLOCKS 4000

static void *keep(void *p)
{
	if (!p)
		abort();
	__asm__ volatile("" : : "r"(p) : "memory");
	*(volatile char *)p = 1;
	return p;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {16, 48, 200, 1000, 3000, 5000, 24, 9000,
				       700, 40000, 100, 2048};
	static const size_t aligns[] = {32, 64, 256, 4096};
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	static void *blocks[BLOCKS];
	uint64_t x = 88172645463325252ull;

	for (int r = 0; r < rounds; r++) {
		size_t size = sizes[r % (sizeof sizes / sizeof *sizes)];
		for (int i = 0; i < BLOCKS; i++) {
			void *p;
			switch (i % 16) {
			case 5:
				p = memalign(aligns[i / 16 % 4], size);
				break;
			case 9:
				p = calloc(1, size);
				break;
			case 13:
				p = realloc(malloc(size / 2 + 1), size);
				break;
			default:
				p = malloc(size);
			}
			blocks[i] = keep(p);
		}
		/* a scattered order: xorshift */
		for (int i = BLOCKS - 1; i > 0; i--) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			int j = (int)(x % (uint64_t)(i + 1));
			void *t = blocks[i];
			blocks[i] = blocks[j];
			blocks[j] = t;
		}
		for (int i = 0; i < BLOCKS; i++)
			free(blocks[i]);
	}
	printf("rounds=%d\n", rounds);
	return 0;
}
