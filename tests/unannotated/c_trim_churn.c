/* Process a stream of frames: each frame gets two fresh 8 MB work buffers
 * (input and output), which are filled, combined, and released. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAME (8u << 20)
#define FRAMES 250

int main(void)
{
	unsigned long check = 0;

	for (int f = 0; f < FRAMES; f++) {
		unsigned char *in = malloc(FRAME);
		unsigned char *out = malloc(FRAME);
		if (!in || !out)
			return 1;
		memset(in, f & 0xff, FRAME);
		memset(out, 0xff, FRAME);
		for (size_t i = 0; i < FRAME; i += 4096)
			out[i] = in[i] + 1;
		check += out[(size_t)f * 4096 % FRAME];
		__asm__ volatile("" : : "r"(in), "r"(out) : "memory");
		free(in);
		free(out);
	}
	printf("check %lu\n", check);
	return 0;
}
