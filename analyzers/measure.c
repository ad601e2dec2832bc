#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"
#include "exec_counts.h"
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

/* Why a run gave nothing to show, as far as can be told. */
static void no_summary(const char *name, const struct mt_measured *m)
{
	char path[4096], status[64];
	bool found = mt_find_command(name, path, sizeof path);
	mt_status_text(m->status, m->signaled, status, sizeof status);
	if (found && mt_is_static(path))
		fprintf(stderr, "memtrace: '%s' is statically linked: it loads no "
				"shared library, so libmemtrace.so (LD_PRELOAD) cannot "
				"interpose its malloc, and it wrote no summary (%s)\n",
			path, status);
	else if (m->signaled)
		fprintf(stderr, "memtrace: '%s' was %s before any of its processes "
				"wrote a summary\n",
			name, status);
	else if (found || m->status != 127) /* else launch said it */
		fprintf(stderr, "memtrace: no process of '%s' wrote a summary (%s; "
				"a program that leaves by _exit writes none)\n",
			name, status);
}

bool mt_measure(const struct mt_launch *l, char *const argv[],
		struct mt_measured *out)
{
	char dir[] = "/tmp/memtrace-run.XXXXXX", tmpl[64];
	struct mt_launch run = *l;
	pid_t child = 0;

	out->processes = NULL;
	out->status = 127;
	out->signaled = false;
	if (!mkdtemp(dir)) {
		perror("memtrace: cannot create a temporary directory");
		return false;
	}
	snprintf(tmpl, sizeof tmpl, "%s/%%p.json", dir);
	run.summary = tmpl;
	struct mt_exec_counts counts = {.valid = false};
	run.exec_counts = &counts;
	out->status = mt_launch_wait(&run, argv, &child, &out->signaled);
	out->processes = collect(dir, (long)child);
	rmdir(dir);
	if (json_array_size(out->processes) == 0) {
		no_summary(argv[0], out);
		return false;
	}
	/* One process: its summary can be put beside the kernel's count of
	 * everything from the exec on (several: the count is of them all). */
	if (counts.valid && json_array_size(out->processes) == 1) {
		json_t *from_exec = json_object();
		for (int k = 0; k < MT_SYS_COUNT; k++)
			json_object_set_new(from_exec, mt_sys_names[k],
					    json_integer((json_int_t)counts.n[k]));
		json_object_set_new(mt_measured_root(out), "syscalls_from_exec",
				    from_exec);
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
