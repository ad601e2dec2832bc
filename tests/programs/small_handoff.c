/* A producer thread makes batches of small messages (32 to 512 bytes), a
 * consumer thread reads and frees them: every block is freed by another
 * thread than the one that made it.  On glibc each such free takes the
 * lock of the producer's arena, which the producer holds as it
 * allocates: the two wait for each other in the kernel (futex), system
 * time no page fault accounts for.  `small_handoff [BATCHES]` */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { BATCH = 256, QUEUE = 16 };

struct batch {
	char *message[BATCH];
};

static struct batch *queue[QUEUE];
static int head, tail, count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long batches;

static void put(struct batch *b)
{
	pthread_mutex_lock(&lock);
	while (count == QUEUE)
		pthread_cond_wait(&not_full, &lock);
	queue[tail] = b;
	tail = (tail + 1) % QUEUE;
	count++;
	pthread_cond_signal(&not_empty);
	pthread_mutex_unlock(&lock);
}

static struct batch *get(void)
{
	pthread_mutex_lock(&lock);
	while (count == 0)
		pthread_cond_wait(&not_empty, &lock);
	struct batch *b = queue[head];
	head = (head + 1) % QUEUE;
	count--;
	pthread_cond_signal(&not_full);
	pthread_mutex_unlock(&lock);
	return b;
}

static void *produce(void *arg)
{
	unsigned seed = 3;
	(void)arg;
	for (long i = 0; i < batches; i++) {
		struct batch *b = malloc(sizeof *b);
		if (!b)
			abort();
		for (int j = 0; j < BATCH; j++) {
			seed = seed * 1664525u + 1013904223u;
			size_t n = 32 + (seed >> 20) % 480;
			char *m = malloc(n);
			if (!m)
				abort();
			m[0] = (char)j;
			m[n - 1] = 1;
			b->message[j] = m;
		}
		put(b);
	}
	put(NULL);
	return NULL;
}

static void *consume(void *arg)
{
	unsigned long sum = 0;
	struct batch *b;
	while ((b = get())) {
		for (int j = 0; j < BATCH; j++) {
			sum += (unsigned char)b->message[j][0];
			free(b->message[j]);
		}
		free(b);
	}
	*(unsigned long *)arg = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	batches = argc > 1 ? atol(argv[1]) : 30000;
	pthread_t producer, consumer;
	unsigned long sum = 0;
	if (pthread_create(&producer, NULL, produce, NULL) ||
	    pthread_create(&consumer, NULL, consume, &sum))
		return 1;
	pthread_join(producer, NULL);
	pthread_join(consumer, NULL);
	printf("%lu\n", sum);
	return 0;
}
