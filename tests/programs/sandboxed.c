/* A program that sandboxes itself as servers do: it allocates, then
 * installs a seccomp filter that kills the process on any system call
 * outside a short list (the memory calls, write, exit), and goes on
 * allocating, writing and exiting.
 * `sandboxed prctl|syscall [tsync|fork|exec]`: the filter through
 * prctl(PR_SET_SECCOMP) or the seccomp system call (with
 * SECCOMP_FILTER_FLAG_TSYNC: every thread at once); `fork` forks a child
 * after it, which allocates and leaves by _exit(4), as a sandboxed
 * server's workers do; `exec` then execs this program again (`sandboxed
 * again`), which allocates and writes under the filter it inherits (the
 * calls the loader and the allocators make at start-up allowed too). */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ALLOW(nr)                                                            \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                     \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static void churn(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		char *p = malloc(4 << 20), *q = malloc(100);
		if (!p || !q)
			abort();
		memset(p, i, 4 << 20);
		free(q);
		free(p);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "again")) {
		churn(5);
		static const char again[] = "sandboxed: done\n";
		return write(1, again, sizeof again - 1) == sizeof again - 1 ? 3 : 1;
	}
	churn(20);
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_brk), ALLOW(SYS_mmap), ALLOW(SYS_munmap),
		ALLOW(SYS_mremap), ALLOW(SYS_madvise), ALLOW(SYS_mprotect),
		ALLOW(SYS_write), ALLOW(SYS_exit_group), ALLOW(SYS_exit),
		ALLOW(SYS_futex), ALLOW(SYS_rt_sigprocmask),
		ALLOW(SYS_clone), ALLOW(SYS_clone3), ALLOW(SYS_wait4),
		ALLOW(SYS_set_robust_list), ALLOW(SYS_execve),
		ALLOW(SYS_openat), ALLOW(SYS_open), ALLOW(SYS_read),
		ALLOW(SYS_close), ALLOW(SYS_newfstatat), ALLOW(SYS_pread64),
		ALLOW(SYS_access), ALLOW(SYS_arch_prctl),
		ALLOW(SYS_set_tid_address), ALLOW(SYS_rseq),
		ALLOW(SYS_prlimit64), ALLOW(SYS_getrandom), ALLOW(SYS_readlink),
		ALLOW(SYS_sched_getaffinity),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = {sizeof code / sizeof *code, code};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("no_new_privs");
		return 1;
	}
	int r;
	if (!strcmp(argv[1], "prctl"))
		r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
	else
		r = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				 argc > 2 && !strcmp(argv[2], "tsync")
					 ? SECCOMP_FILTER_FLAG_TSYNC
					 : 0,
				 &prog);
	if (r) {
		perror("seccomp");
		return 1;
	}
	churn(20);
	if (argc > 2 && !strcmp(argv[2], "fork")) {
		pid_t pid = fork();
		if (pid == 0) {
			churn(5);
			_exit(4);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 4) {
			static const char lost[] = "sandboxed: the child died\n";
			if (write(1, lost, sizeof lost - 1) < 0)
				return 1;
			return 1;
		}
	}
	if (argc > 2 && !strcmp(argv[2], "exec")) {
		execl(argv[0], argv[0], "again", (char *)NULL);
		return 1;
	}
	static const char done[] = "sandboxed: done\n";
	if (write(1, done, sizeof done - 1) != sizeof done - 1)
		return 1;
	return 3;
}
