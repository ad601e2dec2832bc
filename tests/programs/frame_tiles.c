/* A frame processor (new-user trial 37): each frame allocates a 48 MiB
 * frame buffer, above glibc's largest mmap threshold, and eight tiles of
 * 1-3 MiB made and freed one at a time while it lives, fills them,
 * reduces, and frees all.  One frame and one tile are live at once: two
 * blocks in main, but never two of a size, so no line needs its buffer
 * twice over.
 *
 *   frame_tiles [FRAMES]   (default 25) */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 25;
	double acc = 0;
	for (int f = 0; f < frames; f++) {
		size_t frame_bytes = (size_t)48 << 20;
		float *frame = malloc(frame_bytes);
		size_t n = frame_bytes / sizeof(float);
		if (!frame)
			return 1;
		for (size_t i = 0; i < n; i += 8)
			frame[i] = (float)(i % 255) * 0.5f + (float)f;
		for (int t = 0; t < 8; t++) {
			size_t tile_bytes = (size_t)(1 + (f + t) % 3) << 20;
			float *tile = malloc(tile_bytes);
			size_t tn = tile_bytes / sizeof(float);
			if (!tile)
				return 1;
			for (size_t i = 0; i < tn; i++)
				tile[i] = frame[(i * 8 + (size_t)t) % n];
			for (size_t i = 0; i < tn; i += 16)
				acc += tile[i];
			free(tile);
		}
		free(frame);
	}
	printf("%.1f\n", acc);
	return 0;
}
