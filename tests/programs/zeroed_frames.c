/* Frames of an image pipeline: each frame's buffer made with malloc and
 * cleared with memset, drawn into, copied into a second buffer made with
 * malloc and written whole, summed and freed.  GCC at -O2 turns the
 * malloc and the memset of the whole block into one calloc (its strlen
 * pass), so the allocator sees calloc: jemalloc then gives the reused
 * block's pages back to have them zeroed, every frame; the copy's block
 * it reuses as it is (new-user trial 35).
 *
 *   zeroed_frames FRAMES [MIB]   (each buffer 3 MiB, or MIB) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t frame_bytes = (size_t)3 << 20;

static uint8_t *blank_frame(void)
{
	uint8_t *f = malloc(frame_bytes);
	if (!f)
		exit(1);
	memset(f, 0, frame_bytes);
	return f;
}

static __attribute__((noinline)) uint8_t *copy_of(const uint8_t *f)
{
	uint8_t *c = malloc(frame_bytes);
	if (!c)
		exit(1);
	memcpy(c, f, frame_bytes);
	return c;
}

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 100;
	if (argc > 2)
		frame_bytes = (size_t)atoi(argv[2]) << 20;
	uint64_t sum = 0;
	for (int i = 0; i < frames; i++) {
		uint8_t *f = blank_frame();
		for (size_t k = 4096; k < frame_bytes; k += 8192)
			f[k] = (uint8_t)(k + i);
		uint8_t *c = copy_of(f);
		for (size_t k = 0; k < frame_bytes; k += 61)
			sum += c[k];
		free(f);
		free(c);
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
