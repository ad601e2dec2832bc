/* `threads T N`: T producer threads each malloc N blocks and hand them to
 * T consumer threads that free them (cross-thread frees).  Exactly T*N
 * mallocs and T*N frees, from 2*T threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { SLOTS = 1024 };

struct channel {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *slot[SLOTS];
	unsigned head, tail;
};

static long per_thread;

static void put(struct channel *c, void *p)
{
	pthread_mutex_lock(&c->lock);
	while (c->head - c->tail == SLOTS)
		pthread_cond_wait(&c->cond, &c->lock);
	c->slot[c->head++ % SLOTS] = p;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void *take(struct channel *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->head == c->tail)
		pthread_cond_wait(&c->cond, &c->lock);
	void *p = c->slot[c->tail++ % SLOTS];
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return p;
}

static void *producer(void *arg)
{
	for (long i = 0; i < per_thread; i++) {
		char *p = malloc(64 + (size_t)(i % 7) * 100);
		p[0] = (char)i;
		put(arg, p);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	for (long i = 0; i < per_thread; i++)
		free(take(arg));
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 2;
	per_thread = argc > 2 ? atol(argv[2]) : 1000;
	/* Threads and channels come from the stack: no allocations but the
	 * counted ones (pthread_create's stacks are mmapped by glibc itself). */
	pthread_t tid[2 * 64];
	struct channel ch[64];

	if (nthreads < 1 || nthreads > 64)
		return 2;
	for (int i = 0; i < nthreads; i++) {
		pthread_mutex_init(&ch[i].lock, NULL);
		pthread_cond_init(&ch[i].cond, NULL);
		ch[i].head = ch[i].tail = 0;
		pthread_create(&tid[2 * i], NULL, producer, &ch[i]);
		pthread_create(&tid[2 * i + 1], NULL, consumer, &ch[i]);
	}
	for (int i = 0; i < 2 * nthreads; i++)
		pthread_join(tid[i], NULL);
	printf("done %d x %ld\n", nthreads, per_thread);
	return 0;
}
