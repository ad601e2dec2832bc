/* `handoff MODE ROUNDS`, large blocks and threads (no regions):
 *
 *   pool      4 worker threads, each round each makes 2 blocks of 1 MiB in
 *             work(), waits for the others (so 8 are live in the process
 *             at once, 2 on each thread) and frees them
 *   prodcons  2 producer threads make blocks of 1 to 3 MiB and fill them,
 *             2 consumer threads read and free them (a queue of 4): the
 *             blocks are freed by another thread than the one that made
 *             them, ROUNDS of them per producer
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WORKERS = 4, QCAP = 4 };

static int rounds;
static pthread_barrier_t barrier;

static unsigned work(int round)
{
	char *a = malloc(1 << 20), *b = malloc(1 << 20);
	if (!a || !b)
		exit(1);
	memset(a, round, 1 << 20);
	memset(b, round + 1, 1 << 20);
	pthread_barrier_wait(&barrier);
	unsigned sum = (unsigned char)a[round] + (unsigned char)b[round];
	free(a);
	free(b);
	pthread_barrier_wait(&barrier);
	return sum;
}

static void *worker(void *arg)
{
	unsigned sum = 0;
	for (int r = 0; r < rounds; r++)
		sum += work(r);
	*(unsigned *)arg = sum;
	return NULL;
}

static struct {
	char *data[QCAP];
	size_t len[QCAP];
	int head, n;
	pthread_mutex_t mu;
	pthread_cond_t changed;
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

static void *producer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int i = 0; i < rounds; i++) {
		size_t len = (1u << 20) + (rand_r(&seed) % 3) * (1u << 20);
		char *d = malloc(len);
		if (!d)
			exit(1);
		memset(d, i, len);
		pthread_mutex_lock(&q.mu);
		while (q.n == QCAP)
			pthread_cond_wait(&q.changed, &q.mu);
		q.data[(q.head + q.n) % QCAP] = d;
		q.len[(q.head + q.n) % QCAP] = len;
		q.n++;
		pthread_cond_broadcast(&q.changed);
		pthread_mutex_unlock(&q.mu);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	unsigned long sum = 0;
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&q.mu);
		while (q.n == 0)
			pthread_cond_wait(&q.changed, &q.mu);
		char *d = q.data[q.head];
		size_t len = q.len[q.head];
		q.head = (q.head + 1) % QCAP;
		q.n--;
		pthread_cond_broadcast(&q.changed);
		pthread_mutex_unlock(&q.mu);
		for (size_t k = 0; k < len; k += 4096)
			sum += (unsigned char)d[k];
		free(d);
	}
	*(unsigned long *)arg = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	rounds = atoi(argv[2]);
	if (!strcmp(argv[1], "pool")) {
		pthread_t t[WORKERS];
		unsigned sums[WORKERS], total = 0;
		pthread_barrier_init(&barrier, NULL, WORKERS);
		for (int i = 0; i < WORKERS; i++)
			pthread_create(&t[i], NULL, worker, &sums[i]);
		for (int i = 0; i < WORKERS; i++) {
			pthread_join(t[i], NULL);
			total += sums[i];
		}
		printf("%u\n", total);
	} else {
		pthread_t p[2], c[2];
		unsigned long sums[2];
		for (int i = 0; i < 2; i++)
			pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)(i + 7));
		for (int i = 0; i < 2; i++)
			pthread_create(&c[i], NULL, consumer, &sums[i]);
		for (int i = 0; i < 2; i++) {
			pthread_join(p[i], NULL);
			pthread_join(c[i], NULL);
		}
		printf("%lu\n", sums[0] + sums[1]);
	}
	return 0;
}
