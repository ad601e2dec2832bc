#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "launch.h"
#include "summary_table.h"

static const char usage[] =
	"usage: memtrace stat [--backend B] [--json] [-o FILE] -- CMD ARGS...\n"
	"\n"
	"Runs CMD under libmemtrace.so and prints, for each process it\n"
	"started, its allocator calls, heap bytes, memory system calls, page\n"
	"faults and CPU time on stderr, like perf stat.  The exit status is\n"
	"CMD's.\n"
	"\n"
	"  -b, --backend B  allocator to run CMD on (glibc, jemalloc, tcmalloc,\n"
	"                   mimalloc, or the path of a malloc library)\n"
	"  -j, --json       print each process's summary as one JSON line\n"
	"                   (the MEMTRACE_SUMMARY schema) instead of a table\n"
	"  -o, --output FILE  write to FILE instead of stderr\n"
	"  -h, --help       this text\n";

struct process {
	long pid;
	json_t *summary;
};

static int by_pid(const void *a, const void *b)
{
	long x = ((const struct process *)a)->pid, y = ((const struct process *)b)->pid;
	return (x > y) - (x < y);
}

/* Every summary in dir, the root process's first, then by pid; the files
 * are removed as they are read. */
static size_t collect(const char *dir, long root, struct process *out,
		      size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	while (d && (e = readdir(d))) {
		char path[4096];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		json_error_t err;
		json_t *s = strstr(e->d_name, ".tmp.") ? NULL
							: json_load_file(path, 0, &err);
		if (!s && !strstr(e->d_name, ".tmp."))
			fprintf(stderr, "memtrace: unreadable summary %s: %s\n",
				path, err.text);
		unlink(path);
		if (!s)
			continue;
		if (n == max) {
			json_decref(s);
			continue;
		}
		long pid = (long)json_integer_value(json_object_get(s, "pid"));
		out[n++] = (struct process){pid == root ? -1 : pid, s};
	}
	if (d)
		closedir(d);
	qsort(out, n, sizeof *out, by_pid);
	return n;
}

int mt_cmd_stat(int argc, char **argv)
{
	static const struct option options[] = {
		{"backend", required_argument, NULL, 'b'},
		{"json", no_argument, NULL, 'j'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct mt_launch l = {.quiet = true};
	bool as_json = false;
	const char *output = NULL;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+b:jo:h", options, NULL)) != -1) {
		switch (opt) {
		case 'b':
			l.backend = optarg;
			break;
		case 'j':
			as_json = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return mt_usage_error(usage, "stat: unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return mt_usage_error(usage, "stat: no command given");

	FILE *out = stderr;
	if (output && !(out = fopen(output, "we"))) {
		fprintf(stderr, "memtrace: stat: cannot write %s: %m (choose a "
				"writable path for -o)\n",
			output);
		return MT_EXIT_USAGE;
	}

	char dir[] = "/tmp/memtrace-stat.XXXXXX", tmpl[64];
	if (!mkdtemp(dir)) {
		perror("memtrace: stat: cannot create a temporary directory");
		return 1;
	}
	snprintf(tmpl, sizeof tmpl, "%s/%%p.json", dir);
	l.summary = tmpl;
	if (!mt_launch_prepare(&l)) {
		rmdir(dir);
		return MT_EXIT_USAGE;
	}
	pid_t child = 0;
	int status = mt_launch_wait(argv + optind, &child);

	struct process procs[256];
	size_t n = collect(dir, (long)child, procs, 256);
	rmdir(dir);
	if (!n)
		fprintf(stderr, "memtrace: stat: no process wrote a summary "
				"(did '%s' start?)\n",
			argv[optind]);
	for (size_t i = 0; i < n; i++) {
		if (as_json) {
			json_dumpf(procs[i].summary, out, JSON_COMPACT);
			fputc('\n', out);
		} else {
			mt_summary_print_table(out, procs[i].summary);
		}
		json_decref(procs[i].summary);
	}
	if (out != stderr && fclose(out) != 0) {
		fprintf(stderr, "memtrace: stat: writing %s failed: %m\n", output);
		return status ? status : 1;
	}
	return status;
}
