/* `faults N`: touches N fresh pages of one malloc block, then prints the
 * block's address: N page faults at known addresses, for the fault-sample
 * tests. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	char *p = malloc((size_t)n * 4096);

	if (!p)
		return 1;
	for (long i = 0; i < n; i++)
		p[i * 4096] = 1;
	printf("%p %ld\n", (void *)p, n);
	free(p);
	return 0;
}
