/* `read_first`: a 32 MiB table from calloc, its first half read before
 * anything is written to it, then all of it written, summed and freed at
 * the end.  Nothing is given back before the end, yet the run takes half
 * again as many page faults as pages: each page read first maps the
 * kernel's shared page of zeros, and faults again on its first write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MIB = 1 << 20, BYTES = 32 * MIB };

int main(void)
{
	unsigned char *table = calloc(BYTES, 1);
	if (!table)
		return 1;
	unsigned long sum = 0;
	for (size_t i = 0; i < BYTES / 2; i += 4096)
		sum += table[i];
	memset(table, 1, BYTES);
	for (size_t i = 0; i < BYTES; i += 4096)
		sum += table[i];
	printf("%lu\n", sum);
	free(table);
	return 0;
}
