/* `fork_faults [CHILDREN]`: forks CHILDREN (50) children one after
 * another, each making one small allocation and leaving with _exit; prints
 * the page faults a child took, on average (their rusage from wait4).
 * Bare, some 17: the pages a child writes of what it shares with its
 * parent.  Whatever the shim's handlers do in a child on top of that is
 * in the figure. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 50;
	long faults = 0;
	free(malloc(1 << 20));
	for (int i = 0; i < children; i++) {
		pid_t child = fork();
		if (child < 0) {
			perror("fork");
			return 1;
		}
		if (!child) {
			free(malloc(100));
			_exit(0);
		}
		int status;
		struct rusage ru;
		if (wait4(child, &status, 0, &ru) != child || status != 0)
			return 1;
		faults += ru.ru_minflt;
	}
	printf("%.1f\n", (double)faults / children);
	return 0;
}
