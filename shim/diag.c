#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "rawsys.h"

enum { MAX_WARNINGS = 32 };

/* The stderr the process was started with.  A program started with it
 * closed (prog 2>&-) gets number 2 for the next file it opens, its own
 * data: the shim's lines must not go there, nor into another file the
 * program puts at that number later.  They are written only while 2 is
 * still the file it was at start-up. */
static int stderr_state; /* 0: not looked at yet, 1: open, -1: closed */
static dev_t stderr_dev;
static ino_t stderr_ino;

void mt_diag_start(void)
{
	struct stat st;
	if (fstat(STDERR_FILENO, &st) == 0) {
		stderr_dev = st.st_dev;
		stderr_ino = st.st_ino;
		stderr_state = 1;
	} else {
		stderr_state = -1;
	}
}

static bool stderr_is_the_first(void)
{
	struct stat st;
	if (!stderr_state) /* (a message before the constructor ran) */
		mt_diag_start();
	return stderr_state > 0 && fstat(STDERR_FILENO, &st) == 0 &&
	       st.st_dev == stderr_dev && st.st_ino == stderr_ino;
}

/* A pipe whose reader has gone answers a write with SIGPIPE, whose default
 * action kills the program, which may never write to stderr itself (and
 * a file past RLIMIT_FSIZE with SIGXFSZ): see mt_quiet_begin. */
static void write_stderr(const char *buf, size_t n)
{
	struct mt_quiet q;
	long w = 0;

	if (!stderr_is_the_first())
		return;
	mt_quiet_begin(&q);
	for (size_t off = 0; off < n;) {
		w = mt_raw_write(STDERR_FILENO, buf + off, n - off);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	mt_quiet_end(&q, w);
}

static void emit(const char *tag, const char *fmt, va_list ap)
{
	char line[1024];
	int saved_errno = errno;
	int n = snprintf(line, sizeof line, "memtrace: %s", tag);

	n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	write_stderr(line, (size_t)n);
	errno = saved_errno;
}

void mt_warn(const char *fmt, ...)
{
	static unsigned warnings;
	va_list ap;

	if (__atomic_fetch_add(&warnings, 1, __ATOMIC_RELAXED) >= MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	emit("warning: ", fmt, ap);
	va_end(ap);
}

void mt_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("", fmt, ap);
	va_end(ap);
}

void mt_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("error: ", fmt, ap);
	va_end(ap);
	_exit(127);
}
