/* `churn MODE N`: N calls of region MODE, each with a known allocator
 * pattern, so that explain's rules can be checked on a program other than
 * the NumPy one.  Blocks are touched in full, as a program would use them.
 *
 *   trim    two 1 MiB blocks live at once, then both freed: on glibc the
 *           heap grows twice and is trimmed once per call (after a warm-up
 *           that raises the mmap threshold to 1 MiB, as freeing any mapped
 *           block does)
 *   steady  one 1 MiB block per call, after the same warm-up: no churn
 *   mmap    one 48 MiB block per call: above glibc's 32 MiB threshold
 *           ceiling, so mapped and unmapped every call
 *   big     one 8 MiB block per call (jemalloc purges it at once) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace.h"

static char *use(size_t n)
{
	char *p = malloc(n);
	if (!p)
		exit(1);
	memset(p, 1, n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[1];
	int calls = atoi(argv[2]);
	const size_t mib = 1 << 20;

	free(use(mib)); /* warm-up: a mapped 1 MiB block, freed */
	for (int i = 0; i < calls; i++) {
		memtrace_begin(mode);
		if (strcmp(mode, "trim") == 0) {
			char *a = use(mib), *b = use(mib);
			free(b);
			free(a);
		} else if (strcmp(mode, "steady") == 0) {
			free(use(mib));
		} else if (strcmp(mode, "mmap") == 0) {
			free(use(48 * mib));
		} else if (strcmp(mode, "big") == 0) {
			free(use(8 * mib));
		} else {
			return 2;
		}
		memtrace_end(mode);
	}
	printf("%s %d\n", mode, calls);
	return 0;
}
