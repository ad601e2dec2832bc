#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "launch.h"
#include "measure.h"
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

int mt_cmd_stat(int argc, char **argv)
{
	static const struct option options[] = {
		{"backend", required_argument, NULL, 'b'},
		{"json", no_argument, NULL, 'j'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct mt_launch l = {MT_LAUNCH_DEFAULTS, .quiet = true};
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

	if (!mt_launch_check(&l))
		return MT_EXIT_USAGE;
	/* A command that leaves by _exit (dash does) writes no summary: said,
	 * but its exit status is still the answer. */
	struct mt_measured m;
	mt_measure(&l, argv + optind, &m);
	size_t i;
	json_t *summary;
	json_array_foreach(m.processes, i, summary) {
		if (as_json) {
			json_dumpf(summary, out, JSON_COMPACT);
			fputc('\n', out);
		} else {
			mt_summary_print_table(out, summary);
		}
	}
	mt_measured_free(&m);
	if (out != stderr && fclose(out) != 0) {
		fprintf(stderr, "memtrace: stat: writing %s failed: %m\n", output);
		return m.status ? m.status : 1;
	}
	return m.status;
}
