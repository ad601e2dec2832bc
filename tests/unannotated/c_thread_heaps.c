/* A small worker pool: three threads, each handling jobs that need a batch
 * of scratch blocks (below 128 KiB each, a few MB a job), filled and freed
 * when the job is done. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 3
#define JOBS 400
#define BLOCKS 24

struct worker {
	size_t block;
	unsigned long result;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	char *blocks[BLOCKS];

	for (int job = 0; job < JOBS; job++) {
		for (int i = 0; i < BLOCKS; i++) {
			blocks[i] = malloc(w->block);
			if (!blocks[i])
				abort();
			memset(blocks[i], job + i, w->block);
		}
		for (int i = 0; i < BLOCKS; i++)
			w->result += (unsigned char)blocks[i][w->block / 3];
		for (int i = BLOCKS - 1; i >= 0; i--)
			free(blocks[i]);
	}
	return NULL;
}

int main(void)
{
	static const size_t sizes[THREADS] = {64 * 1024, 100 * 1024, 120 * 1024};
	struct worker w[THREADS];
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i].block = sizes[i];
		w[i].result = 0;
		if (pthread_create(&t[i], NULL, run, &w[i]) != 0)
			return 1;
	}
	unsigned long total = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		total += w[i].result;
	}
	printf("total %lu\n", total);
	return 0;
}
