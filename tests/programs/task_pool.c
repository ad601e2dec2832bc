/* task_pool [TASKS]: four threads, each running TASKS tasks (default 300)
 * of one buffer of 1 to 8 MiB, written, read and freed.  On jemalloc
 * every buffer is purged as it is freed and faulted in anew by the next
 * (purge-churn), while the decay keeps some of them resident between
 * tasks (memory kept): purging sooner would make the churn worse. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4 };
static int tasks = 300;
static unsigned long sums[THREADS];

static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned seed = 1234 + (unsigned)id;
	unsigned long sum = 0;
	for (int t = 0; t < tasks; t++) {
		size_t size = (size_t)(rand_r(&seed) % 8 + 1) << 20;
		unsigned char *buf = malloc(size); /* the task's buffer */
		if (!buf)
			return NULL;
		memset(buf, t & 0xff, size);
		sum += buf[size / 3];
		free(buf);
	}
	sums[id] = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		tasks = atoi(argv[1]);
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	unsigned long sum = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		sum += sums[i];
	}
	printf("sum=%lu\n", sum);
	return 0;
}
