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
 *   big     one 8 MiB block per call (jemalloc purges it at once)
 *   smalltrim  a 300 KiB block and a 40-byte one after it, both freed: the
 *           small free trims the heap when glibc has no tcache nor
 *           fastbins for it (run with GLIBC_TUNABLES=glibc.malloc.
 *           tcache_count=0:glibc.malloc.mmap_threshold=1048576 and
 *           glibc.malloc.mxfast=0, or use smalltrim-mallopt, which sets
 *           M_MXFAST to 0 itself); the next call grows the heap again */
#include <malloc.h>
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

	if (strcmp(mode, "smalltrim-mallopt") == 0) {
		mallopt(M_MXFAST, 0);
		mode = "smalltrim";
	}
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
		} else if (strcmp(mode, "smalltrim") == 0) {
			char *a = use(300 << 10), *b = use(40);
			free(a);
			free(b);
		} else {
			return 2;
		}
		memtrace_end(mode);
	}
	printf("%s %d\n", mode, calls);
	return 0;
}
