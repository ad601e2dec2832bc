/* `free_then_work [SECONDS]`: 4 threads allocate 64 MiB each in blocks of
 * 4-16 KiB, touch them and free them all, and end; then the main thread
 * works for SECONDS (1 by default) without calling the allocator, and
 * says on stderr how much memory the process had resident after the frees
 * (VmRSS, kB): what the allocator kept while the program worked on. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { THREADS = 4 };
#define PER_THREAD (64u << 20)

static long resident_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	size_t n = PER_THREAD / 4096, k = 0, got = 0;
	char **blocks = malloc(n * sizeof *blocks);
	while (got < PER_THREAD && k < n) {
		seed = seed * 1103515245u + 12345u;
		size_t size = 4096 + (seed >> 8) % 12288;
		blocks[k] = malloc(size);
		memset(blocks[k], 1, size);
		got += size;
		k++;
	}
	for (size_t i = 0; i < k; i++)
		free(blocks[i]);
	free(blocks);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	pthread_t tid[THREADS];
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&tid[i], NULL, churn, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	long after = resident_kb();
	volatile double x = 0;
	double start = now_s();
	while (now_s() - start < seconds)
		for (int i = 0; i < 100000; i++)
			x += i;
	fprintf(stderr, "resident after the frees: %ld kB\n", after);
	printf("done\n");
	return 0;
}
