/* `small_sites ROUNDS [THREADS [SIZE]]`: two functions allocate small
 * blocks, one three times the bytes of the other (nodes: 3 x 40,000 blocks
 * of 96 B; names: 40,000 of 96 B), and both are freed each round; no block
 * is large.  Which code the small blocks come from, by their bytes: 75%
 * nodes, 25% names.  With THREADS, that many threads do the rounds at
 * once, each with blocks of its own, and end before main does.  With
 * SIZE, blocks of that many bytes (96 to 65536), as many fewer: a round
 * allocates the same bytes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_COUNT = 40000, MIN_SIZE = 96, MAX_THREADS = 16 };

static int rounds = 10, count = MAX_COUNT;
static size_t size = MIN_SIZE;

static __attribute__((noinline)) void nodes(void **out)
{
	for (int i = 0; i < 3 * count; i++) {
		out[i] = malloc(size);
		memset(out[i], i, size);
	}
}

static __attribute__((noinline)) void names(void **out)
{
	for (int i = 0; i < count; i++) {
		out[i] = malloc(size);
		memset(out[i], i, size);
	}
}

static void *run_rounds(void *arg)
{
	void **blocks = arg;
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++) {
		nodes(blocks);
		names(blocks + 3 * count);
		for (int i = 0; i < 4 * count; i += 97)
			sum += ((unsigned char *)blocks[i])[r % size];
		for (int i = 0; i < 4 * count; i++)
			free(blocks[i]);
	}
	return (void *)sum;
}

static void *blocks[MAX_THREADS][4 * MAX_COUNT];

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atoi(argv[1]) : 10;
	int threads = argc > 2 ? atoi(argv[2]) : 0;
	if (threads < 0 || threads > MAX_THREADS) {
		fprintf(stderr, "small_sites: THREADS is 0 to %d\n", MAX_THREADS);
		return 2;
	}
	size = argc > 3 ? strtoul(argv[3], NULL, 10) : MIN_SIZE;
	if (size < MIN_SIZE || size > 65536) {
		fprintf(stderr, "small_sites: SIZE is %d to 65536\n", MIN_SIZE);
		return 2;
	}
	count = (int)(MAX_COUNT * MIN_SIZE / size);
	unsigned long sum = 0;
	if (!threads)
		sum = (unsigned long)run_rounds(blocks[0]);
	pthread_t tid[MAX_THREADS];
	for (int k = 0; k < threads; k++)
		if (pthread_create(&tid[k], NULL, run_rounds, blocks[k])) {
			perror("pthread_create");
			return 1;
		}
	for (int k = 0; k < threads; k++) {
		void *part;
		pthread_join(tid[k], &part);
		sum += (unsigned long)part;
	}
	printf("%lu\n", sum);
	return 0;
}
