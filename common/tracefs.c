#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tracefs.h"

static const char *const roots[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

long mt_tracefs_id(const char *category, const char *event, int *err)
{
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
		char path[256], buf[32];
		snprintf(path, sizeof path, "%s/events/%s/%s/id", roots[i],
			 category, event);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (err && (!*err || errno != ENOENT))
				*err = errno;
			continue;
		}
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			return strtol(buf, NULL, 10);
		}
	}
	return -1;
}
