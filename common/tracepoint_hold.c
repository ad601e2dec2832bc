#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracepoint_hold.h"

socklen_t mt_hold_address(struct sockaddr_un *a)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	/* (abstract: sun_path[0] is NUL; nothing on disk to clean up) */
	int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, MT_HOLD_SOCKET,
			 (unsigned)getuid());
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int connect_holder(void)
{
	struct sockaddr_un a;
	socklen_t len = mt_hold_address(&a);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* strace -f and gdb follow the children: a holder that outlives this
 * process would keep them waiting. */
static bool traced(void)
{
	char buf[2048];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	const char *t = strstr(buf, "TracerPid:");
	return !t || strtol(t + 10, NULL, 10) != 0;
}

struct spawn {
	const char *path;
	int fd;
	volatile bool failed;
};

/* In the children, on this process's memory until execve (CLONE_VM |
 * CLONE_VFORK, as posix_spawn does): only calls that keep no state.  The
 * holder gets the connection as descriptor 3 and /dev/null for 0-2,
 * nothing else of this process's. */
static int exec_holder(void *arg)
{
	struct spawn *s = arg;
	if (s->fd == 3 ? fcntl(3, F_SETFD, 0) != 0 : dup2(s->fd, 3) != 3)
		goto fail;
	close_range(0, 2, 0);
	close_range(4, ~0U, 0);
	if (open("/dev/null", O_RDWR) == 0) {
		dup2(0, 1);
		dup2(0, 2);
	}
	char *argv[] = {"memtrace-hold", NULL}, *envp[] = {NULL};
	execve(s->path, argv, envp);
fail:
	s->failed = true;
	_exit(127);
}

/* The child between: it starts the holder and leaves, so that the holder
 * is nobody's child here (init's).  It never execs: an exec would give it
 * SIGCHLD as its exit signal, which this process's handler would see. */
static int start_holder(void *arg)
{
	static char stack[16384] __attribute__((aligned(16)));
	struct spawn *s = arg;
	if (clone(exec_holder, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
		  s) < 0)
		s->failed = true;
	_exit(0);
}

/* Starts the holder with one end of a connection, and returns the other.
 * The child started here is a clone with no exit signal (a program's
 * wait(-1) never sees it, nor does its SIGCHLD handler), reaped here. */
static int spawn_holder(const char *path)
{
	static char stack[16384] __attribute__((aligned(16)));
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
		return -1;
	struct spawn s = {.path = path, .fd = sp[1], .failed = false};
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(start_holder, stack + sizeof stack, CLONE_VM | CLONE_VFORK,
			  &s);
	if (pid > 0)
		while (waitpid(pid, NULL, __WCLONE) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(sp[1]);
	if (pid <= 0 || s.failed) {
		close(sp[0]);
		return -1;
	}
	return sp[0];
}

int mt_tracepoints_hold(const char *holder)
{
	int saved = errno;
	int fd = connect_holder();
	if (fd < 0 && holder && !traced())
		fd = spawn_holder(holder);
	errno = saved;
	return fd;
}

bool mt_holder_beside(const char *path, char *out, unsigned long size)
{
	const char *slash = strrchr(path, '/');
	int dir = slash ? (int)(slash - path + 1) : 0;
	int n = snprintf(out, size, "%.*smemtrace-hold", dir, path);
	return n > 0 && (unsigned long)n < size && access(out, X_OK) == 0;
}
