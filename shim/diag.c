#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
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
/* A terminal's path, where stderr was one: a program that closes its
 * stderr before it exits (coreutils' sort and cat, close_stdout) printed
 * no summary to the user at that terminal, who saw nothing at all; the
 * terminal is opened again for the shim's lines then. */
static char stderr_tty[64];

void mt_diag_start(void)
{
	struct stat st;
	if (fstat(STDERR_FILENO, &st) == 0) {
		stderr_dev = st.st_dev;
		stderr_ino = st.st_ino;
		stderr_state = 1;
		/* (readlink, not ttyname_r, which may scan /dev with
		 * opendir's malloc: this may run before the shim's own
		 * constructor) */
		ssize_t n = S_ISCHR(st.st_mode) && isatty(STDERR_FILENO)
				    ? readlink("/proc/self/fd/2", stderr_tty,
					       sizeof stderr_tty - 1)
				    : -1;
		stderr_tty[n > 0 ? n : 0] = '\0';
		if (strncmp(stderr_tty, "/dev/", 5) != 0)
			stderr_tty[0] = '\0';
	} else {
		stderr_state = -1;
	}
}

/* The terminal stderr was, opened again where the program closed its
 * stderr (not where it put another file at 2: that is the program's);
 * -1 otherwise. */
static int stderr_tty_again(void)
{
	struct stat st;
	if (!stderr_tty[0] || fstat(STDERR_FILENO, &st) == 0 || errno != EBADF)
		return -1;
	int fd = (int)mt_raw_openat(stderr_tty, O_WRONLY | O_NOCTTY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || st.st_dev != stderr_dev || st.st_ino != stderr_ino) {
		mt_raw_close(fd);
		return -1;
	}
	return fd;
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
	int fd = STDERR_FILENO;

	if (!stderr_is_the_first() && (fd = stderr_tty_again()) < 0)
		return;
	mt_quiet_begin(&q);
	for (size_t off = 0; off < n;) {
		w = mt_raw_write(fd, buf + off, n - off);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	mt_quiet_end(&q, w);
	if (fd != STDERR_FILENO)
		mt_raw_close(fd);
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
