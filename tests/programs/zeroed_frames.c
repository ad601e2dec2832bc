/* Frames of an image pipeline: each frame's buffer made with malloc and
 * cleared with memset, drawn into, summed and freed.  GCC at -O2 turns
 * the malloc and the memset of the whole block into one calloc (its
 * strlen pass), so the allocator sees calloc: jemalloc then gives the
 * reused block's pages back to have them zeroed, every frame (new-user
 * trial 35).
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

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 100;
	uint64_t sum = 0;
	for (int i = 0; i < frames; i++) {
		uint8_t *f = blank_frame();
		for (size_t y = 1; y < HEIGHT; y += 2)
			for (size_t x = 0; x < WIDTH; x += 3)
				f[y * WIDTH + x] = (uint8_t)(x + y + i);
		for (size_t k = 0; k < (size_t)WIDTH * HEIGHT; k += 61)
			sum += f[k];
		free(f);
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
