/* Driving lttng-tools' command line (the interface its users know and
 * script) around the traced command. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lttng_session.h"

extern char **environ;

/* Run a tool quietly (its stderr kept for its own messages); returns its
 * exit status, or 127 when it cannot be started. */
static int tool(const char *const argv[], bool show_stderr)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null",
					 O_WRONLY, 0);
	if (!show_stderr)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO,
						 "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int err = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv,
			       environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return 127;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	if (!WIFEXITED(status))
		return 128;
	return WEXITSTATUS(status);
}

static bool lttng(const char *what, const char *const argv[])
{
	if (tool(argv, true) == 0)
		return true;
	fprintf(stderr, "memtrace: lttng %s failed (its message is above)\n",
		what);
	return false;
}

/* lttng-sessiond, started the way lttng(1) would, but said aloud. */
static bool ensure_session_daemon(void)
{
	const char *const list[] = {"lttng", "list", NULL};
	if (tool(list, false) == 0)
		return true;
	const char *const start[] = {"lttng-sessiond", "--daemonize", NULL};
	if (tool(start, true) != 0) {
		fprintf(stderr, "memtrace: no LTTng session daemon runs and "
				"lttng-sessiond --daemonize failed\n");
		return false;
	}
	fprintf(stderr, "memtrace: no LTTng session daemon was running; "
			"started one (lttng-sessiond --daemonize, as %s), "
			"which keeps running\n",
		geteuid() == 0 ? "root" : "this user");
	return true;
}

static bool default_dir(char *out, size_t size, const char *session)
{
	const char *home = getenv("LTTNG_HOME");
	if (!home || !*home)
		home = getenv("HOME");
	if (!home || !*home)
		home = ".";
	int n = snprintf(out, size, "%s/lttng-traces/%s", home, session);
	return n > 0 && (size_t)n < size;
}

int mt_lttng_run(const struct mt_launch *l, const char *dir,
		 char *const argv[])
{
	const char *const version[] = {"lttng", "version", NULL};
	if (tool(version, false) == 127) {
		fprintf(stderr, "memtrace: the lttng command is missing: install "
				"lttng-tools (Debian: apt-get install "
				"lttng-tools)\n");
		return 1;
	}
	if (!ensure_session_daemon())
		return 1;

	char session[64], where[PATH_MAX];
	snprintf(session, sizeof session, "memtrace-%ld", (long)getpid());
	if (!dir) {
		if (!default_dir(where, sizeof where, session)) {
			fprintf(stderr, "memtrace: HOME is too long a path; "
					"give the trace's directory with -o\n");
			return 1;
		}
		dir = where;
	}
	const char *const create[] = {"lttng", "create", session, "--output",
				      dir, NULL};
	if (!lttng("create", create))
		return 1;
	const char *const enable[] = {"lttng", "enable-event", "--userspace",
				      "memtrace:*", "--session", session, NULL};
	const char *const context[] = {"lttng", "add-context", "--userspace",
				       "--session", session, "--type", "vpid",
				       "--type", "vtid", "--type", "procname",
				       NULL};
	const char *const start[] = {"lttng", "start", session, NULL};
	const char *const stop[] = {"lttng", "stop", session, NULL};
	const char *const destroy[] = {"lttng", "destroy", session, NULL};
	bool started = lttng("enable-event", enable) &&
		       lttng("add-context", context) && lttng("start", start);
	int status = 1;
	if (started) {
		pid_t child;
		struct mt_launch with_lttng = *l;
		with_lttng.lttng = true;
		status = mt_launch_wait(&with_lttng, argv, &child, NULL);
		/* stop waits until every event is in the trace. */
		lttng("stop", stop);
	}
	lttng("destroy", destroy);
	if (started)
		fprintf(stderr, "memtrace: LTTng trace in %s (babeltrace2 %s)\n",
			dir, dir);
	return status;
}
