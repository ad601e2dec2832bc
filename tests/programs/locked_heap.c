/* Threads that each allocate, fill and free blocks of 200-600 KiB: past
 * tcmalloc's 256 KiB, where every call takes the lock of its page heap,
 * so on two cores its threads spin waiting for each other (glibc gives
 * each thread an arena of its own).  `locked_heap THREADS BLOCKS`. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long blocks;

static __attribute__((noinline)) unsigned long fill(char *b, size_t n, int v)
{
	memset(b, v, n);
	unsigned long sum = 0;
	for (size_t i = 0; i < n; i += 4096)
		sum += (unsigned char)b[i];
	return sum;
}

static void *work(void *arg)
{
	unsigned seed = (unsigned)(long)arg * 7919u + 1;
	unsigned long sum = 0;
	for (long i = 0; i < blocks; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t n = (200 << 10) + (seed >> 8) % (400 << 10);
		char *b = malloc(n);
		if (!b)
			abort();
		sum += fill(b, n, (int)(i & 0xff));
		free(b);
	}
	return (void *)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	blocks = argc > 2 ? atol(argv[2]) : 4000;
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		return 2;
	for (long i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, work, (void *)i) != 0)
			return 1;
	unsigned long sum = 0;
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		sum += (unsigned long)r;
	}
	printf("%lu\n", sum);
	return 0;
}
