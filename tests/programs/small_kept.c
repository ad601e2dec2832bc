/* `small_kept [SECONDS]`: loads a table of 1.5 million small strings
 * (some 130 MiB), frees 99 in 100 of them, then works on the rest for
 * about SECONDS (default 1).  Only small blocks are freed: the memory the
 * allocator keeps (each page still holds a live string) is there from the
 * frees to the exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;
	size_t n = 1500000;
	char **tab = malloc(n * sizeof *tab);
	if (!tab)
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (!(tab[i] = malloc(64 + i % 32)))
			return 1;
		memset(tab[i], 'a' + (int)(i % 26), 64);
	}
	for (size_t i = 0; i < n; i++)
		if (i % 100) {
			free(tab[i]);
			tab[i] = NULL;
		}
	unsigned long s = 0;
	double end = now() + seconds;
	for (int r = 0; now() < end; r++)
		for (size_t i = 0; i < n; i += 100)
			s += (unsigned char)tab[i][r % 64] + (unsigned)r;
	printf("%d\n", s > 0);
	return 0;
}
