/* `sparse_grids FRAMES [keep]`: each frame asks calloc for a zeroed grid
 * of 64 MiB (4096 x 2048 doubles), adds 5,000 points into one window of
 * 256 x 256 cells, sums the window and frees the grid: a fresh mapping a
 * frame on glibc, of which only the window's pages are touched.  Keeping
 * the grid (thresholds, tcmalloc) makes calloc zero all 64 MiB a frame;
 * with `keep` the program makes the grid once and clears the window it
 * wrote (new-user trial 45's heat map, in C). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 4096, COLS = 2048, WINDOW = 256, POINTS = 5000 };

static unsigned long state = 1;

static unsigned next(unsigned below)
{
	state = state * 6364136223846793005ul + 1442695040888963407ul;
	return (unsigned)(state >> 33) % below;
}

static double frame(double *grid, int keep)
{
	unsigned r0 = next(ROWS - WINDOW), c0 = next(COLS - WINDOW);
	for (int i = 0; i < POINTS; i++)
		grid[(size_t)(r0 + next(WINDOW)) * COLS + c0 + next(WINDOW)] += 1;
	double sum = 0;
	for (unsigned r = r0; r < r0 + WINDOW; r++)
		for (unsigned c = c0; c < c0 + WINDOW; c++)
			sum += grid[(size_t)r * COLS + c] * (r ^ c);
	if (keep)
		for (unsigned r = r0; r < r0 + WINDOW; r++)
			memset(&grid[(size_t)r * COLS + c0], 0,
			       WINDOW * sizeof *grid);
	return sum;
}

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 300;
	int keep = argc > 2 && strcmp(argv[2], "keep") == 0;
	double sum = 0, *kept = keep ? calloc((size_t)ROWS * COLS, sizeof *kept)
				     : NULL;
	for (int f = 0; f < frames; f++) {
		double *grid = keep ? kept
				    : calloc((size_t)ROWS * COLS, sizeof *grid);
		if (!grid)
			return 1;
		sum += frame(grid, keep);
		if (!keep)
			free(grid);
	}
	free(kept);
	printf("%.0f\n", sum);
	return 0;
}
