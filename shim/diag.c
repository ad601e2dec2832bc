#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "diag.h"
#include "rawsys.h"

enum { MAX_WARNINGS = 32 };

static void emit(const char *tag, const char *fmt, va_list ap)
{
	char line[1024];
	int saved_errno = errno;
	int n = snprintf(line, sizeof line, "memtrace: %s", tag);

	n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	for (int off = 0; off < n;) {
		long w = mt_raw_write(STDERR_FILENO, line + off, (size_t)(n - off));
		if (w == -EINTR)
			continue;
		if (w <= 0)
			break;
		off += (int)w;
	}
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
