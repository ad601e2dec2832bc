/* `fork_exec MODE A B`: the parent makes A mallocs, forks, and the child
 * makes B mallocs then exits (MODE=fork), or execs itself as
 * `fork_exec leaf B` (MODE=exec).  `leaf B` makes B mallocs.  Every 1000
 * mallocs also map, touch and unmap 64 KiB, so each process has syscalls
 * and faults of its own.  Each process prints its pid and role so a test
 * can match summaries to processes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void allocate(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(48);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		if (i % 1000 == 999) {
			char *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				exit(1);
			m[0] = 1;
			munmap(m, 65536);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[1];
	if (strcmp(mode, "leaf") == 0) {
		allocate(atol(argv[2]));
		printf("leaf %d\n", (int)getpid());
		return 0;
	}
	if (argc < 4)
		return 2;
	allocate(atol(argv[2]));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (strcmp(mode, "exec") == 0) {
			execl("/proc/self/exe", argv[0], "leaf", argv[3], (char *)NULL);
			_exit(127);
		}
		allocate(atol(argv[3]));
		printf("child %d\n", (int)getpid());
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	printf("parent %d\n", (int)getpid());
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
