/* The same work in every run, and in the first run only (no file at
 * PATH yet) a third of a second more in the kernel: a run's system time
 * that moves while its page faults do not.
 *
 *   uneven_kernel PATH */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int fd = open(argv[1], O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (fd >= 0) {
		close(fd);
		double end = cpu_s() + 0.3;
		while (cpu_s() < end)
			for (int i = 0; i < 1000; i++)
				syscall(SYS_getppid);
	}
	for (int round = 0; round < 20; round++) {
		char *p = malloc(4 << 20);
		if (!p)
			return 1;
		memset(p, round, 4 << 20);
		free(p);
	}
	return 0;
}
