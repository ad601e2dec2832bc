/* `inlined_temp [FRAMES]`: frame() makes a 34 MiB scratch buffer and frees
 * it (above the 32 MiB glibc maps at any threshold: mapped and unmapped
 * each frame); keep() fills one buffer it keeps for the whole run.  Both
 * are inlined into main, so main's blocks are two at once, but frame's
 * own are never more than one: nothing to write in place. */
#include <stdio.h>
#include <stdlib.h>

#define SCRATCH (34u << 20)

static unsigned char *kept;

static inline __attribute__((always_inline)) double frame(int f)
{
	unsigned char *scratch = malloc(SCRATCH);
	if (!scratch)
		abort();
	for (size_t i = 0; i < SCRATCH; i += 64)
		scratch[i] = (unsigned char)(i + f);
	double s = 0;
	for (size_t i = 0; i < SCRATCH; i += 4096)
		s += scratch[i];
	free(scratch);
	return s;
}

static inline __attribute__((always_inline)) double keep(int f)
{
	if (!kept && !(kept = malloc(SCRATCH)))
		abort();
	for (size_t i = 0; i < SCRATCH; i += 4096)
		kept[i] = (unsigned char)(i * f);
	return kept[4096 * (size_t)f];
}

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 12;
	double t = 0;
	for (int f = 0; f < frames; f++) {
		t += frame(f);
		t += keep(f);
	}
	printf("%.0f\n", t);
	free(kept);
	return 0;
}
