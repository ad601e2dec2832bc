#define _GNU_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "launch.h"
#include "record_run.h"

char *mt_record_run(const char *who, const char *backend, char *const argv[],
		    const char *dir, int *status)
{
	char *path = NULL;
	*status = 1;
	if (asprintf(&path, "%s/trace.mt", dir) < 0)
		return NULL;
	struct mt_launch l = {MT_LAUNCH_DEFAULTS, .backend = backend,
			      .trace = path, .quiet = true};
	if (!mt_launch_check(&l)) {
		free(path);
		return NULL;
	}
	pid_t child;
	bool signaled;
	*status = mt_launch_wait(&l, argv, &child, &signaled);
	if (access(path, R_OK) != 0) {
		fprintf(stderr, "memtrace: %s: '%s' left no trace (exit status "
				"%d)\n",
			who, argv[0], *status);
		free(path);
		return NULL;
	}
	return path;
}

void mt_remove_run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[4096];
		if (e->d_name[0] != '.' &&
		    snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
			unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}
