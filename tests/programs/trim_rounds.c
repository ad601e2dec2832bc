/* `trim_rounds [ROUNDS [keep]]`: 20,000 blocks of 200 B to 2 KB allocated,
 * written and freed, then malloc_trim(0), each round (not with `keep`:
 * then free's own trims alone, which the trim threshold decides).  free() trims the
 * top of the heap once a round, and malloc_trim gives back the rest: the
 * top again, and the free pages below it with one madvise a free stretch
 * (some 22 a call), which the next round faults in again.  No trim
 * threshold stops malloc_trim (new-user trial 23). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCKS = 20000 };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	int trims = !(argc > 2 && !strcmp(argv[2], "keep"));
	unsigned long sum = 0;
	char **v = malloc(BLOCKS * sizeof *v);
	if (!v)
		return 1;
	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < BLOCKS; i++) {
			size_t n = 200 + (i * 37) % 1800;
			if (!(v[i] = malloc(n)))
				return 1;
			memset(v[i], (int)i, n);
		}
		for (size_t i = 0; i < BLOCKS; i++)
			sum += (unsigned char)v[i][5];
		for (size_t i = 0; i < BLOCKS; i++)
			free(v[i]);
		if (trims)
			malloc_trim(0);
	}
	printf("%lu\n", sum);
	free(v);
	return 0;
}
