/* `random_records [THREADS [MILLIONS]]`: each thread (2 by default) keeps
 * 50,000 records of 16 to 255 bytes and replaces one chosen at random,
 * MILLIONS (6) million times: a working set of some 7 MiB a thread, so
 * that most blocks freed are cold in the cache, and of mixed sizes (as a
 * cache's or a tree's nodes are).  The shim's cost a call, measured in a
 * loop of one size whose block stays in the cache, is a fifth of what
 * such a program feels (new-user trial 20). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { SLOTS = 50000 };

static long iterations = 6000000;

static void *work(void *arg)
{
	unsigned s = (unsigned)(size_t)arg;
	char **slot = calloc(SLOTS, sizeof *slot);
	unsigned long sum = 0;
	if (!slot)
		return NULL;
	for (long i = 0; i < iterations; i++) {
		s = s * 1103515245u + 12345u;
		unsigned k = (s >> 8) % SLOTS;
		size_t n = 16 + (s >> 3) % 240;
		free(slot[k]);
		slot[k] = malloc(n);
		if (!slot[k])
			abort();
		slot[k][0] = (char)i;
		slot[k][n - 1] = 1;
		sum += slot[(k * 7) % SLOTS] != NULL;
	}
	for (unsigned k = 0; k < SLOTS; k++)
		free(slot[k]);
	free(slot);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	if (argc > 2)
		iterations = (long)(atof(argv[2]) * 1e6);
	if (threads < 1 || threads > 64 || iterations < 1)
		return 2;
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, work, (void *)(size_t)(i + 1)))
			return 1;
	unsigned long seen = 0;
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		seen += (unsigned long)r;
	}
	printf("%lu\n", seen);
	return 0;
}
