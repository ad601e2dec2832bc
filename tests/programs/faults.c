/* `faults N [ROUNDS]`: touches N fresh pages of one malloc block, then
 * prints the block's address: N page faults at known addresses, for the
 * fault-sample tests.  With ROUNDS, that many times over, each block
 * freed before the next (and a small block made and freed beside it):
 * the pages fault again each round where the allocator gives them back. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long rounds = argc > 2 ? atol(argv[2]) : 1;
	void *first = NULL;

	for (long r = 0; r < rounds; r++) {
		char *small = malloc(24);
		char *p = malloc((size_t)n * 4096);
		if (!p || !small)
			return 1;
		for (long i = 0; i < n; i++)
			p[i * 4096] = 1;
		if (r == 0)
			first = p;
		free(p);
		free(small);
	}
	/* (printed after: stdout's buffer, made by the first printf, would
	 * sit above the block and keep the heap from shrinking under it) */
	printf("%p %ld\n", first, n);
	return 0;
}
