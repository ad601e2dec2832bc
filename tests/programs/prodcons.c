/* Producers allocate messages of 1 to 3 MiB and fill them; consumers read
 * and free them, in other threads (glibc: each thread's heap gives back
 * what the consumers free).  `prodcons MESSAGES` per producer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SLOTS = 4, PRODUCERS = 2, CONSUMERS = 2 };

static struct {
	unsigned char *data;
	size_t len;
} queue[SLOTS];
static int head, tail, queued, producing = PRODUCERS, messages = 400;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static unsigned long sums[CONSUMERS];

static void *produce(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg;
	for (int i = 0; i < messages; i++) {
		size_t len = ((size_t)1 + rand_r(&seed) % 3) << 20;
		unsigned char *p = malloc(len);
		if (!p)
			abort();
		memset(p, i, len);
		pthread_mutex_lock(&lock);
		while (queued == SLOTS)
			pthread_cond_wait(&not_full, &lock);
		queue[tail].data = p;
		queue[tail].len = len;
		tail = (tail + 1) % SLOTS;
		queued++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	producing--;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *consume(void *arg)
{
	size_t id = (size_t)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!queued && producing)
			pthread_cond_wait(&not_empty, &lock);
		if (!queued) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		unsigned char *p = queue[head].data;
		size_t len = queue[head].len;
		head = (head + 1) % SLOTS;
		queued--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);
		for (size_t i = 0; i < len; i += 4096)
			sums[id] += p[i];
		free(p);
	}
}

int main(int argc, char **argv)
{
	pthread_t p[PRODUCERS], c[CONSUMERS];
	if (argc > 1)
		messages = atoi(argv[1]);
	for (size_t i = 0; i < PRODUCERS; i++)
		pthread_create(&p[i], NULL, produce, (void *)(i + 1));
	for (size_t i = 0; i < CONSUMERS; i++)
		pthread_create(&c[i], NULL, consume, (void *)i);
	for (size_t i = 0; i < PRODUCERS; i++)
		pthread_join(p[i], NULL);
	for (size_t i = 0; i < CONSUMERS; i++)
		pthread_join(c[i], NULL);
	printf("sum %lu\n", sums[0] + sums[1]);
	return 0;
}
