/* Two threads each read /dev/zero into one buffer of their own: system
 * time that no page fault accounts for, with threads, and a handful of
 * allocations: none of it the allocator's.  `thread_reads [READS]` */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long reads;

static void *read_zeros(void *arg)
{
	(void)arg;
	int fd = open("/dev/zero", O_RDONLY);
	char *buffer = malloc(1 << 16);
	long sum = 0;
	if (fd < 0 || !buffer)
		abort();
	for (long i = 0; i < reads; i++) {
		if (read(fd, buffer, 1 << 16) <= 0)
			abort();
		sum += buffer[i & 0xffff];
	}
	close(fd);
	free(buffer);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	reads = argc > 1 ? atol(argv[1]) : 60000;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, read_zeros, NULL))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	puts("read");
	return 0;
}
