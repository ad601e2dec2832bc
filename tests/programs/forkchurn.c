/* A parent that does nothing but fork: each of its children churns
 * (12 blocks of 48 MiB, each filled and freed) and leaves by _exit, as a
 * server's workers do, or by exit.  `forkchurn CHILDREN _exit|exit`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int churn(void)
{
	size_t n = (size_t)48 << 20;
	long sum = 0;
	for (int i = 0; i < 12; i++) {
		char *b = malloc(n);
		if (!b)
			return 1;
		memset(b, i, n);
		__asm__ volatile("" : : "r"(b) : "memory");
		sum += b[n / 2];
		free(b);
	}
	return (int)(sum & 1);
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 2;
	int by_exit = argc > 2 && strcmp(argv[2], "exit") == 0;
	long total = 0;
	for (int c = 0; c < children; c++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			int r = churn();
			if (by_exit)
				exit(r);
			_exit(r);
		}
		int status;
		waitpid(p, &status, 0);
		total += WEXITSTATUS(status);
	}
	printf("%ld\n", total);
	return 0;
}
