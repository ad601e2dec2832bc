/* `regions N`: N calls of region "work", each with three 200 KB blocks
 * (two live at once) and one 64 KiB mapping; inside each, a nested region
 * "inner" with one 100-byte malloc.  Then one call of region "idle" that
 * allocates nothing.  Builds and runs without libmemtrace.so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memtrace.h"

static void *touch(void *p, size_t n)
{
	memset(p, 1, n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	const size_t big = 200 * 1024;

	for (int i = 0; i < n; i++) {
		memtrace_begin("work");
		char *a = touch(malloc(big), big);
		char *b = touch(malloc(big), big);
		free(a);
		char *c = touch(malloc(big), big);
		free(b);
		free(c);
		char *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		touch(m, 65536);
		munmap(m, 65536);
		memtrace_begin("inner");
		free(touch(malloc(100), 100));
		memtrace_end("inner");
		memtrace_end("work");
	}
	memtrace_begin("idle");
	memtrace_end("idle");
	printf("regions done %d\n", n);
	return 0;
}
