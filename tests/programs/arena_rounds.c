/* `arena_rounds ROUNDS [MIB]`: each round, 4 threads each allocate MIB
 * (96) MiB in blocks of 1 to 7 KiB, write them, free them all and end.
 * Each thread takes a heap of its own from glibc (a thread arena), 64 MiB
 * at most a heap, so the blocks of one thread fill two heaps or more; as
 * they are freed glibc deletes the heaps whole (munmap), which no trim
 * threshold stops, and the next round's threads grow new ones, a little
 * at a time (mprotect), faulting every page again (new-user trial 28:
 * 839k faults for 170k pages resident, 3x tcmalloc's CPU). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { THREADS = 4 };

static size_t per_thread;

static void *work(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg;
	size_t n = 0, cap = 1024, got = 0;
	char **v = malloc(cap * sizeof *v);
	long sum = 0;
	if (!v)
		abort();
	while (got < per_thread) {
		seed = seed * 1103515245u + 12345u;
		size_t size = 1024 + (seed >> 8) % 6144;
		if (n == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				abort();
		}
		char *p = malloc(size);
		if (!p)
			abort();
		p[0] = (char)size;
		p[size - 1] = 1;
		v[n++] = p;
		got += size;
	}
	for (size_t i = 0; i < n; i++) {
		sum += v[i][0];
		free(v[i]);
	}
	free(v);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	per_thread = (size_t)(argc > 2 ? atol(argv[2]) : 96) << 20;
	long total = 0;
	for (int r = 0; r < rounds; r++) {
		pthread_t t[THREADS];
		for (size_t i = 0; i < THREADS; i++)
			if (pthread_create(&t[i], NULL, work,
					   (void *)(i + 1 + (size_t)r * 10)))
				return 1;
		for (int i = 0; i < THREADS; i++) {
			void *x;
			pthread_join(t[i], &x);
			total += (long)x;
		}
	}
	printf("%d rounds, %ld\n", rounds, total);
	return 0;
}
