/* A parent that does nothing but fork: each of its children churns
 * (12 blocks of 48 MiB, each filled and freed) and leaves by _exit, as a
 * server's workers do, or by exit, or waits to be ended by the parent's
 * SIGTERM, as a pool's workers are.  `apart`: every second child churns
 * in another function, the same work at other code; `parent`: the
 * parent churns too, blocks of 80 MiB before its first fork (another
 * setting stops its churn than its children's).
 * `forkchurn CHILDREN _exit|exit|sigterm [apart|parent]`. */
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static __attribute__((noinline)) int churn(size_t n)
{
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

enum { CHILD_BLOCK = 48 << 20 };

static __attribute__((noinline)) int churn_elsewhere(void)
{
	int r = churn(CHILD_BLOCK);
	__asm__ volatile("" ::: "memory"); /* (not a tail call) */
	return r;
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 2;
	int by_exit = argc > 2 && strcmp(argv[2], "exit") == 0;
	int killed = argc > 2 && strcmp(argv[2], "sigterm") == 0;
	int apart = argc > 3 && strcmp(argv[3], "apart") == 0;
	long total = 0;
	if (argc > 3 && strcmp(argv[3], "parent") == 0)
		total += churn((size_t)80 << 20);
	for (int c = 0; c < children; c++) {
		int done[2];
		if (pipe(done) != 0)
			return 1;
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			int r = apart && c % 2 ? churn_elsewhere() : churn(CHILD_BLOCK);
			if (by_exit)
				exit(r);
			if (!killed)
				_exit(r);
			/* done: wait for the parent's SIGTERM */
			if (write(done[1], "x", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		char x;
		if (killed && (read(done[0], &x, 1) != 1 || kill(p, SIGTERM) != 0))
			return 1;
		close(done[0]);
		close(done[1]);
		int status;
		waitpid(p, &status, 0);
		total += killed ? WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM
				: WEXITSTATUS(status);
	}
	printf("%ld\n", total);
	return 0;
}
