/* `many_threads N [BATCH]`: N short-lived threads, BATCH of them alive at a
 * time (default 100), each one malloc and one free of its own.  So a trace
 * holds N threads, more than the kernel has thread ids for (pid_max, often
 * 32768: ids are reused), and exactly N mallocs made by them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *one(void *arg)
{
	char *p = malloc(48);
	if (!p)
		abort();
	p[0] = (char)(size_t)arg;
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long batch = argc > 2 ? atol(argv[2]) : 100;
	pthread_attr_t attr;
	pthread_t *tid;

	if (n < 1 || batch < 1)
		return 2;
	/* Small stacks: a batch of threads costs little address space. */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	tid = calloc((size_t)batch, sizeof *tid);
	if (!tid)
		return 1;
	for (long done = 0; done < n;) {
		long k = n - done < batch ? n - done : batch;
		for (long i = 0; i < k; i++)
			if (pthread_create(&tid[i], &attr, one, (void *)(done + i)) != 0)
				return 1;
		for (long i = 0; i < k; i++)
			pthread_join(tid[i], NULL);
		done += k;
	}
	free(tid);
	printf("threads %ld\n", n);
	return 0;
}
