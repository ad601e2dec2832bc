/* Frames of an image pipeline: each frame's buffer made with malloc and
 * cleared with memset, drawn into, copied into a second buffer made with
 * malloc and written whole, summed and freed.  GCC at -O2 turns the
 * malloc and the memset of the whole block into one calloc (its strlen
 * pass), so the allocator sees calloc: jemalloc then gives the reused
 * block's pages back to have them zeroed, every frame; the copy's block
 * it reuses as it is (new-user trial 35).
 *
 *   zeroed_frames FRAMES */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDTH = 1536, HEIGHT = 2048 };

static uint8_t *blank_frame(void)
{
	uint8_t *f = malloc((size_t)WIDTH * HEIGHT);
	if (!f)
		exit(1);
	memset(f, 0, (size_t)WIDTH * HEIGHT);
	return f;
}

static __attribute__((noinline)) uint8_t *copy_of(const uint8_t *f)
{
	uint8_t *c = malloc((size_t)WIDTH * HEIGHT);
	if (!c)
		exit(1);
	memcpy(c, f, (size_t)WIDTH * HEIGHT);
	return c;
}

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 100;
	uint64_t sum = 0;
	for (int i = 0; i < frames; i++) {
		uint8_t *f = blank_frame();
		for (size_t y = 1; y < HEIGHT; y += 2)
			for (size_t x = 0; x < WIDTH; x += 3)
				f[y * WIDTH + x] = (uint8_t)(x + y + i);
		uint8_t *c = copy_of(f);
		for (size_t k = 0; k < (size_t)WIDTH * HEIGHT; k += 61)
			sum += c[k];
		free(f);
		free(c);
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
