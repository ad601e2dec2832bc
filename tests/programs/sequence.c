/* A known sequence of events for the trace round trip: `sequence` makes,
 * in order, the calls tests/integration/test_trace.py expects to read back
 * from `memtrace dump`.  `sequence forever` then allocates until killed;
 * `sequence idle` waits to be killed, recording nothing more; `sequence
 * pause` records nothing for 300 ms, then exits. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memtrace.h"

static void *escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(int argc, char **argv)
{
	memtrace_begin("seq");
	char *a = escape(malloc(100));
	char *b = escape(calloc(10, 30));
	a = escape(realloc(a, 1000));
	void *c;
	if (posix_memalign(&c, 256, 512))
		return 1;
	escape(c);
	escape((void *)malloc_usable_size(b));
	free(b);
	free(a);
	free(c);
	void *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(m, 8192, MADV_DONTNEED);
	munmap(m, 8192);
	memtrace_end("seq");
	printf("sequence done\n");
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "forever") == 0)
		for (unsigned long i = 0;; i++) {
			free(escape(malloc(64 + i % 512)));
			if (i % 1000 == 0)
				usleep(1000);
		}
	if (argc > 1 && strcmp(argv[1], "pause") == 0)
		usleep(300000);
	if (argc > 1 && strcmp(argv[1], "idle") == 0)
		for (;;)
			pause();
	return 0;
}
