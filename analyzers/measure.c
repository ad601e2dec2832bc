#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"

/* Every summary in dir into an array, the one of pid `root` first; the
 * files are removed as they are read. */
static json_t *collect(const char *dir, long root)
{
	json_t *all = json_array();
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[4096];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		bool partial = strstr(e->d_name, ".tmp.") != NULL;
		json_error_t err;
		json_t *s = partial ? NULL : json_load_file(path, 0, &err);
		if (!s && !partial)
			fprintf(stderr, "memtrace: unreadable summary %s: %s\n",
				path, err.text);
		unlink(path);
		if (!s)
			continue;
		long pid = (long)json_integer_value(json_object_get(s, "pid"));
		if (pid == root)
			json_array_insert_new(all, 0, s);
		else
			json_array_append_new(all, s);
	}
	if (d)
		closedir(d);
	return all;
}

bool mt_measure(const struct mt_launch *l, char *const argv[],
		struct mt_measured *out)
{
	char dir[] = "/tmp/memtrace-run.XXXXXX", tmpl[64];
	struct mt_launch run = *l;
	pid_t child = 0;

	out->processes = NULL;
	if (!mkdtemp(dir)) {
		perror("memtrace: cannot create a temporary directory");
		return false;
	}
	snprintf(tmpl, sizeof tmpl, "%s/%%p.json", dir);
	run.summary = tmpl;
	out->status = mt_launch_wait(&run, argv, &child);
	out->processes = collect(dir, (long)child);
	rmdir(dir);
	if (json_array_size(out->processes) == 0) {
		fprintf(stderr, "memtrace: no process wrote a summary (did '%s' "
				"start?)\n",
			argv[0]);
		return false;
	}
	return true;
}

json_t *mt_measured_root(const struct mt_measured *m)
{
	return m->processes ? json_array_get(m->processes, 0) : NULL;
}

void mt_measured_free(struct mt_measured *m)
{
	json_decref(m->processes);
	m->processes = NULL;
}
