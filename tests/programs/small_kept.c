/* `small_kept [MILLION [end]]`: loads MILLION (default 1.5) million small
 * blocks of mixed sizes (24 to 200 B, some 190 MiB), frees 99 in 100 of
 * them, keeping a scattered one in a hundred, then works on the survivors
 * (with a small block allocated and freed now and then) for as long as the
 * loading and freeing took.  No large block is ever freed: the table of
 * pointers lives to the exit.  A survivor on most pages keeps what was
 * freed around it resident on glibc (fragmentation), from the frees to
 * the exit.
 *
 * With `end`, nothing is kept: every block lives and is worked on, and
 * all are freed at the end, before the result is printed (on glibc the
 * printf's buffer sorts the 1.5 million chunks freed, some 100 ms). */
#include <stdbool.h>
#include <stdint.h>
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

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int main(int argc, char **argv)
{
	size_t n = (size_t)((argc > 1 ? atof(argv[1]) : 1.5) * 1e6);
	double start = now();
	uint64_t rng = 88172645463325252ull;
	char **tab = malloc(n * sizeof *tab);
	if (!tab)
		return 1;
	for (size_t i = 0; i < n; i++) {
		size_t size = 24 + next(&rng) % 177;
		if (!(tab[i] = malloc(size)))
			return 1;
		memset(tab[i], (int)(i & 0x7f), size);
	}
	bool at_end = argc > 2 && !strcmp(argv[2], "end");
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (at_end || next(&rng) % 100 == 0)
			tab[kept++] = tab[i];
		else
			free(tab[i]);
	}
	/* as long again, on the survivors only */
	double end = now() + (now() - start);
	unsigned long sum = 0;
	for (unsigned r = 0; now() < end; r++) {
		for (size_t i = 0; i < kept; i++)
			sum += (unsigned char)tab[i][r % 24];
		char *scratch = malloc(64 + r % 64);
		if (!scratch)
			return 1;
		snprintf(scratch, 64, "%lu", sum);
		sum += (unsigned char)scratch[0];
		free(scratch);
	}
	if (at_end)
		for (size_t i = 0; i < kept; i++)
			free(tab[i]);
	printf("%zu kept, %lu\n", kept, sum);
	return 0;
}
