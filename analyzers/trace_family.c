#define _GNU_SOURCE
#include <dirent.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_family.h"
#include "trace_read.h"

struct member {
	char *path;
	long pid, parent;
	bool in;
};

/* ".<digits>" or ".<digits>.<digits>": what the shim adds to PATH. */
static bool family_suffix(const char *s)
{
	int parts = 0;
	while (*s == '.' && s[1] >= '0' && s[1] <= '9') {
		s++;
		while (*s >= '0' && *s <= '9')
			s++;
		parts++;
	}
	return !*s && parts >= 1 && parts <= 2;
}

static bool header_pids(const char *path, long *pid, long *parent)
{
	char err[256];
	struct mt_trace *t = mt_trace_open(path, err, sizeof err);
	json_t *meta = t ? mt_trace_metadata(t) : NULL;
	if (meta) {
		*pid = (long)json_integer_value(json_object_get(meta, "pid"));
		*parent = (long)json_integer_value(json_object_get(meta, "parent_pid"));
		/* (a child started by vfork or posix_spawn, then exec'd, has
		 * no parent_pid; the process that started it, since ppid was
		 * written) */
		if (!*parent)
			*parent = (long)json_integer_value(json_object_get(meta, "ppid"));
	}
	mt_trace_close(t);
	return meta != NULL;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->path,
		      ((const struct member *)b)->path);
}

char **mt_trace_family(const char *path)
{
	long root = 0, unused;
	char *dir_copy = strdup(path), *base_copy = strdup(path);
	const char *dir = dirname(dir_copy), *base = basename(base_copy);
	size_t base_len = strlen(base), n = 0, cap = 0;
	struct member *m = NULL;
	struct stat st;
	/* (an LTTng trace, a directory, holds every process itself) */
	bool file = stat(path, &st) == 0 && S_ISREG(st.st_mode);
	DIR *d = file && header_pids(path, &root, &unused) ? opendir(dir) : NULL;
	struct dirent *e;

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, base, base_len) ||
		    !family_suffix(e->d_name + base_len))
			continue;
		char *p;
		long pid, parent;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			break;
		if (!mt_is_recording(p) || !header_pids(p, &pid, &parent)) {
			free(p);
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			m = realloc(m, cap * sizeof *m);
		}
		m[n++] = (struct member){p, pid, parent, pid == root};
	}
	if (d)
		closedir(d);
	/* Descendants: a parent in, the child in (and its later images),
	 * until nothing changes. */
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			bool in = m[i].in || m[i].parent == root;
			for (size_t j = 0; j < n && !in; j++)
				in = m[j].in && (m[j].pid == m[i].parent ||
						 m[j].pid == m[i].pid);
			if (in && !m[i].in)
				m[i].in = grew = true;
		}
	}
	qsort(m, n, sizeof *m, by_path);
	char **out = calloc(n + 1, sizeof *out);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (m[i].in)
			out[k++] = m[i].path;
		else
			free(m[i].path);
	free(m);
	free(dir_copy);
	free(base_copy);
	if (!k) {
		free(out);
		return NULL;
	}
	return out;
}

void mt_trace_family_free(char **paths)
{
	for (size_t i = 0; paths && paths[i]; i++)
		free(paths[i]);
	free(paths);
}
