/* thread_records [THREADS] [ROUNDS] [PER]: a pool of worker threads (8 by
 * default), each building a list of PER (20,000) records of 16 B to 2 KiB
 * and dropping it all, ROUNDS (40) times.  On jemalloc its purges churn,
 * and it already holds several times the live bytes resident: never
 * purging holds more still (new-user trial 31). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rounds = 40, per = 20000;

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(long)arg * 7919u + 1;
	char **records = malloc((size_t)per * sizeof *records);
	long sum = 0;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < per; i++) {
			seed = seed * 1103515245u + 12345u;
			records[i] = malloc(16 + (seed >> 16) % 2000);
			memset(records[i], i, 16);
		}
		for (int i = 0; i < per; i++) {
			sum += records[i][3];
			free(records[i]);
		}
	}
	free(records);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (argc > 3)
		per = atoi(argv[3]);
	pthread_t t[64];
	long total = 0;
	if (threads < 1 || threads > 64)
		return 2;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
	}
	printf("%ld\n", total);
	return 0;
}
