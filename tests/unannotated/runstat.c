/* Measuring helper for ground_truth.py, not part of the corpus.
 *
 *   runstat OUT.json PROG [ARGS...]
 *
 * Forks (from this small process, so the child's ru_maxrss is not inflated
 * by a big parent's pages carried across exec), execs PROG, waits for it
 * with wait4() and writes its own rusage and the wall time to OUT.json.
 * Exits with PROG's status. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv(struct timeval t)
{
	return t.tv_sec + t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: runstat OUT.json PROG [ARGS...]\n");
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror("execvp");
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	fprintf(f,
		"{\"wall_s\": %.6f, \"user_s\": %.6f, \"sys_s\": %.6f, "
		"\"maxrss_kb\": %ld, \"minflt\": %ld, \"majflt\": %ld, "
		"\"nvcsw\": %ld, \"nivcsw\": %ld, \"status\": %d}\n",
		(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_maxrss, ru.ru_minflt,
		ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw,
		WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	fclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
