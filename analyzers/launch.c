#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends.h"
#include "exec_counts.h"
#include "launch.h"
#include "memtrace/events.h"
#include "tracepoint_hold.h"

static bool in_build_tree;

/* libmemtrace.so in the build tree (../shim/ from analyzers/), else where
 * it is installed; MEMTRACE_LIB overrides both. */
static const char *shim_path(void)
{
	static char path[PATH_MAX + 32];
	const char *env = getenv("MEMTRACE_LIB");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof path, "%s/../shim/libmemtrace.so", exe);
			if (access(path, R_OK) == 0) {
				in_build_tree = true;
				return path;
			}
		}
	}
	return MT_INSTALLED_SHIM;
}

static const char *backend_library(const char *backend, char *buf,
				   size_t len)
{
	if (mt_backend_is_path(backend)) {
		if (access(backend, R_OK) != 0) {
			fprintf(stderr,
				"memtrace: backend library %s: %s (give the path "
				"of an installed malloc library)\n",
				backend, strerror(errno));
			return NULL;
		}
		return backend;
	}
	const struct mt_backend *b = mt_backend_by_name(backend);
	if (!b) {
		fprintf(stderr,
			"memtrace: unknown backend '%s' (accepted: %s, or the "
			"path of a malloc library)\n",
			backend, mt_backend_names());
		return NULL;
	}
	if (!b->soname)
		return "";
	const char *path = mt_backend_locate(b, buf, len);
	if (!path)
		fprintf(stderr,
			"memtrace: backend %s is not installed: %s was not found "
			"(install it with: apt-get install %s)\n",
			b->name, b->soname, b->package);
	return path;
}

/* The kernel counters find the syscall tracepoints in tracefs.  perf mounts
 * it when it is missing; so do we, as root. */
static void ensure_tracefs(void)
{
	static const char dir[] = "/sys/kernel/tracing";
	struct stat st;

	if (stat("/sys/kernel/tracing/events", &st) == 0 ||
	    stat("/sys/kernel/debug/tracing/events", &st) == 0 || geteuid() != 0)
		return;
	if (mount("nodev", dir, "tracefs", 0, NULL) == 0)
		fprintf(stderr, "memtrace: mounted tracefs at %s (for the kernel "
				"counters)\n",
			dir);
}

/* The kernel unregisters a tracepoint when the last perf event on it goes,
 * and waits for an RCU grace period each time (~35 ms here): a process
 * that counts the six syscall tracepoints pays ~0.2 s at exit, and again
 * at each exec, when it is their only user.  Connected to memtrace-hold
 * (tracepoint_hold.h) while the commands run, they stay registered, the
 * commands' own events come and go for free, and this process's exit
 * waits for nothing either.  Under mt_launch_exec, the command's shim
 * connects itself. */
static void hold_tracepoints(void)
{
	static bool held;
	char holder[PATH_MAX + 32];
	if (held)
		return;
	held = true;
	/* (kept for the life of this process: never closed) */
	if (mt_holder_beside(shim_path(), holder, sizeof holder))
		mt_tracepoints_hold(holder);
}

/* So that a Python program can `import memtrace` for its regions. */
static void prepend_pythonpath(const char *dir)
{
	const char *old = getenv("PYTHONPATH");
	char value[8192];

	snprintf(value, sizeof value, "%s%s%s", dir, old && *old ? ":" : "",
		 old ? old : "");
	setenv("PYTHONPATH", value, 1);
}

bool mt_launch_check(const struct mt_launch *l)
{
	char buf[PATH_MAX];
	const char *shim = shim_path();

	if (access(shim, R_OK) != 0) {
		fprintf(stderr,
			"memtrace: cannot find libmemtrace.so (looked at %s); "
			"set MEMTRACE_LIB to its path\n",
			shim);
		return false;
	}
	if (l->backend && !backend_library(l->backend, buf, sizeof buf))
		return false;
	ensure_tracefs();
	return true;
}

/* The environment of a bare run: the backend's library before whatever
 * the user preloads, nothing of ours (MEMTRACE_ settings without the shim
 * are inert; the memtrace Python module does nothing without it). */
static void setup_bare_env(const struct mt_launch *l)
{
	char buf[PATH_MAX], preload[8192];
	const char *lib = l->backend ? backend_library(l->backend, buf, sizeof buf)
				     : "";
	const char *old = getenv("LD_PRELOAD");

	(void)shim_path(); /* (where the Python module is) */
	snprintf(preload, sizeof preload, "%s%s%s", lib ? lib : "",
		 lib && *lib && old && *old ? ":" : "", old ? old : "");
	if (*preload)
		setenv("LD_PRELOAD", preload, 1);
	for (char *const *e = l->env; e && *e; e++)
		putenv(*e);
	prepend_pythonpath(in_build_tree ? MT_SOURCE_PYTHON : MT_INSTALLED_PYTHON);
}

/* This process's environment for l (after mt_launch_check). */
static void setup_env(const struct mt_launch *l)
{
	if (l->bare) {
		setup_bare_env(l);
		return;
	}
	char buf[PATH_MAX], preload[8192];
	const char *shim = shim_path();
	const char *lib = l->backend ? backend_library(l->backend, buf, sizeof buf)
				     : "";
	const char *old = getenv("LD_PRELOAD");

	snprintf(preload, sizeof preload, "%s%s%s%s%s", shim,
		 lib && *lib ? ":" : "", lib ? lib : "", old && *old ? ":" : "",
		 old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	if (l->backend)
		setenv("MEMTRACE_BACKEND", l->backend, 1);
	if (l->summary)
		setenv("MEMTRACE_SUMMARY", l->summary, 1);
	if (l->quiet)
		setenv("MEMTRACE_QUIET", "1", 1);
	if (l->trace)
		setenv("MEMTRACE_OUT", l->trace, 1);
	if (l->force)
		setenv("MEMTRACE_FORCE", "1", 1);
	if (l->compress)
		setenv("MEMTRACE_COMPRESS", "1", 1);
	if (l->lttng)
		setenv("MEMTRACE_LTTNG", "1", 1);
	for (char *const *e = l->env; e && *e; e++)
		putenv(*e);
	prepend_pythonpath(in_build_tree ? MT_SOURCE_PYTHON : MT_INSTALLED_PYTHON);
}

void mt_launch_exec(const struct mt_launch *l, char *const argv[])
{
	setup_env(l);
	execvp(argv[0], argv);
	fprintf(stderr, "memtrace: cannot run '%s': %s\n", argv[0],
		strerror(errno));
}

int mt_launch_wait(const struct mt_launch *l, char *const argv[], pid_t *child,
		   bool *signaled)
{
	int status;
	hold_tracepoints();
	/* With exec counts, the child waits at `go` until they are open. */
	int go[2] = {-1, -1};
	if (l->exec_counts && pipe2(go, O_CLOEXEC) != 0)
		go[0] = go[1] = -1;
	pid_t pid = fork();

	if (signaled)
		*signaled = false;
	if (pid < 0) {
		fprintf(stderr, "memtrace: fork: %s\n", strerror(errno));
		if (go[0] >= 0) {
			close(go[0]);
			close(go[1]);
		}
		return 127;
	}
	if (pid == 0) {
		if (go[0] >= 0) {
			char byte;
			close(go[1]);
			while (read(go[0], &byte, 1) < 0 && errno == EINTR)
				;
		}
		if (l->stdout_fd >= 0)
			dup2(l->stdout_fd, STDOUT_FILENO);
		if (l->stderr_fd >= 0)
			dup2(l->stderr_fd, STDERR_FILENO);
		mt_launch_exec(l, argv);
		_exit(127);
	}
	*child = pid;
	if (go[0] >= 0) {
		mt_exec_counts_open(l->exec_counts, pid);
		close(go[0]);
		close(go[1]); /* the child reads the end of the pipe: go */
	} else if (l->exec_counts) {
		l->exec_counts->valid = false;
		for (int k = 0; k < MT_SYS_COUNT; k++)
			l->exec_counts->fd[k] = -1;
	}
	/* Like time(1): the terminal's ^C goes to the child; we wait for it
	 * to finish and then report. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	struct rusage usage = {0};
	while (wait4(pid, &status, 0, &usage) < 0)
		if (errno != EINTR) {
			status = 127 << 8;
			break;
		}
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	if (l->exec_counts)
		mt_exec_counts_read(l->exec_counts);
	if (l->usage)
		*l->usage = usage;
	if (WIFSIGNALED(status)) {
		if (signaled)
			*signaled = true;
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}
