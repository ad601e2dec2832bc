/* kept_buffers: two threads each keep 16 buffers of 1 MiB for their whole
 * life (made once, read 200 times, freed at the end), while the main
 * thread, 40 times, makes and frees 2,000 small blocks, calls
 * malloc_trim(0), and writes then madvise(MADV_DONTNEED)s a 32 MiB mapping
 * of its own (new-user trial 13).  The buffers are no temporaries, and the
 * program's own madvise is not the allocator's purging.  `kept_buffers
 * serial`: the second thread starts when the first has ended, as a busy
 * machine may run them. */
#include <malloc.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { BUFFERS = 16, SIZE = 1 << 20, OWN = 32 << 20 };

static void *worker(void *arg)
{
	long id = (long)arg;
	char *bufs[BUFFERS];
	unsigned long sum = 0;
	for (int i = 0; i < BUFFERS; i++) {
		bufs[i] = malloc(SIZE); /* kept for the thread's life */
		memset(bufs[i], i, SIZE);
	}
	for (int r = 0; r < 200; r++)
		for (int i = 0; i < BUFFERS; i++) {
			bufs[i][(r * 4096 + id) % SIZE]++;
			for (int j = 0; j < SIZE; j += 512)
				sum += (unsigned char)bufs[i][j];
		}
	for (int i = 0; i < BUFFERS; i++)
		free(bufs[i]);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	bool serial = argc > 1 && strcmp(argv[1], "serial") == 0;
	pthread_t t[2];
	unsigned long total = 0;
	for (long i = 0; i < 2; i++) {
		void *sum;
		pthread_create(&t[i], NULL, worker, (void *)i);
		if (serial && pthread_join(t[i], &sum) == 0)
			total += (unsigned long)sum;
	}
	char *own = mmap(NULL, OWN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (own == MAP_FAILED)
		return 1;
	for (int r = 0; r < 40; r++) {
		static void *small[2000];
		for (int i = 0; i < 2000; i++) {
			small[i] = malloc(2000);
			memset(small[i], 1, 2000);
		}
		for (int i = 0; i < 2000; i++)
			free(small[i]);
		malloc_trim(0);
		memset(own, r, OWN);
		madvise(own, OWN, MADV_DONTNEED);
	}
	for (int i = 0; i < 2 && !serial; i++) {
		void *sum;
		pthread_join(t[i], &sum);
		total += (unsigned long)sum;
	}
	printf("total=%lu\n", total);
	return 0;
}
