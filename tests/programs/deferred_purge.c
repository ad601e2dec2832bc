/* Two buffers a round, of about 2 MiB and 6 MiB, written and freed (the
 * first after 40 ms of other work: small blocks, a millisecond apart).  An allocator
 * that purges freed pages some time after the free (mimalloc: 10-20 ms)
 * does it inside one of the later calls, a small block's or the next
 * round's first.  The purge is the work of both frees, three quarters of
 * it the larger block's.
 *
 *   deferred_purge ROUNDS */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory"); /* (its writes kept) */
}

static __attribute__((noinline)) char *filled(size_t n)
{
	char *p = malloc(n);
	if (!p)
		exit(1);
	memset(p, 1, n);
	keep(p);
	return p;
}

static void other_work(void)
{
	const struct timespec ms = {0, 1000 * 1000};
	for (int k = 0; k < 40; k++) {
		void *p = malloc(1000);
		keep(p);
		free(p);
		nanosleep(&ms, NULL);
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	for (int i = 0; i < rounds; i++) {
		size_t step = (size_t)(i % 5) << 18; /* (sizes vary a little) */
		char *kept = filled((2 << 20) + step);
		free(filled((6 << 20) + 3 * step));
		other_work();
		free(kept);
	}
	return 0;
}
