/* trim_requests [REQUESTS] [BLOCKS]: a service that hands memory back
 * after each request: BLOCKS (3,000) blocks of 200 B to 2 KB allocated,
 * written and freed, then malloc_trim(0), REQUESTS (4,000) times, each
 * well under a millisecond apart.  Every call madvises the free pages of
 * the heap away (new-user trial 31). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int requests = argc > 1 ? atoi(argv[1]) : 4000;
	int blocks = argc > 2 ? atoi(argv[2]) : 3000;
	char **v = malloc((size_t)blocks * sizeof *v);
	long sum = 0;
	for (int r = 0; r < requests; r++) {
		for (int i = 0; i < blocks; i++) {
			v[i] = malloc(200 + (size_t)(i * 37) % 1800);
			memset(v[i], r, 200);
		}
		for (int i = 0; i < blocks; i++) {
			sum += v[i][i % 200];
			free(v[i]);
		}
		malloc_trim(0);
	}
	free(v);
	printf("%ld\n", sum);
	return 0;
}
