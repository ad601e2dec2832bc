#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "command.h"
#include "launch.h"
#include "replay_json.h"
#include "trace_family.h"
#include "measure.h"
#include "sites.h"
#include "symbolize.h"
#include "summary_table.h"

static bool by_site;
static unsigned depth = 3; /* frames shown of a site's stack (--depth) */

static void print_summary(FILE *out, json_t *s)
{
	if (by_site) {
		mt_sites_symbolize(s);
		mt_sites_print(out, s, depth);
	}
	else
		mt_summary_print_table(out, s);
}

static const char usage[] =
	"usage: memtrace stat [--backend B] [--json] [--by-site [--depth N]] [-o FILE]\n"
	"                     -- CMD ARGS...\n"
	"       memtrace stat [--json] [--by-site [--depth N]] [--salvage] [--pid PID[.N]]\n"
	"                     [-o FILE] TRACE\n"
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
	"  -s, --salvage    with TRACE: skip damaged chunks (or, in an LTTng\n"
	"                   trace, events LTTng discarded)\n"
	"  -S, --by-site    the sites of large blocks (where the program\n"
	"                   allocates them, and what the allocator did to the\n"
	"                   kernel meanwhile), and of small blocks sampled,\n"
	"                   instead of the figures\n"
	"  -d, --depth N    with --by-site: N frames of each stack (the site's\n"
	"                   own and its callers; default 3); sites that read the\n"
	"                   same at that depth are summed into one row\n"
	"  -p, --pid PID[.N]  with an LTTng TRACE: the process to read\n"
	"                   (default: the first one started); .N: its image\n"
	"                   after N execs\n"
	"\n"
	"TRACE may also be a summary file (MEMTRACE_SUMMARY, or stat --json's\n"
	"output): its summaries are printed again, as a table or by site.\n"
	"With TRACE (MEMTRACE_OUT, memtrace run -o, or the directory of an\n"
	"LTTng trace: memtrace run --lttng -o DIR), the summary is computed\n"
	"from the recorded events: the same figures as the live summary; the\n"
	"files the command's other processes recorded beside a native TRACE\n"
	"(TRACE.<pid>: its children; .1, .2: images after an exec) follow.  A\n"
	"recording that did not cover the whole run (killed, full disk, _exit,\n"
	"exec, lost events) gives the figures of what it recorded, marked\n"
	"\"partial\" with the reason.  Without --, one argument that is a trace\n"
	"or names no program is read as a trace.\n"
	"  -h, --help       this text\n";

/* `stat X` (no "--"): X is a trace when it is one (a directory, LTTng's,
 * or a file that starts as a trace), or a file that is no program to run;
 * a command when it is a program, here or on PATH.  Anything else names
 * no file at all: said as such, rather than run. */
enum { A_COMMAND, A_TRACE, A_MISSING };

static int classify(const char *arg)
{
	struct stat st;
	char path[4096];
	if (mt_is_recording(arg))
		return A_TRACE;
	/* (a device, a pipe, a file without x: no program, whatever its
	 * permissions say; /dev/null was run) */
	if (stat(arg, &st) == 0)
		return S_ISREG(st.st_mode) && access(arg, X_OK) == 0 ? A_COMMAND
								     : A_TRACE;
	return mt_find_command(arg, path, sizeof path) ? A_COMMAND : A_MISSING;
}

/* On stderr, one line: what the figures lack, and why. */
static void warn_partial(const char *path, json_t *s)
{
	json_t *incomplete = json_object_get(s, "incomplete"), *v;
	size_t i;
	if (!json_object_get(s, "partial_reason"))
		return;
	fprintf(stderr, "memtrace: stat: %s: %s: %s", path,
		json_is_true(json_object_get(s, "partial")) ? "partial figures"
							     : "complete figures",
		json_string_value(json_object_get(s, "partial_reason")));
	json_array_foreach(incomplete, i, v) fprintf(stderr, "%s%s",
						     i ? ", " : " (incomplete: ",
						     json_string_value(v));
	fputs(json_array_size(incomplete) ? ")\n" : "\n", stderr);
}

/* The summary of a recorded run, computed from its events. */
/* A summary file (MEMTRACE_SUMMARY, or stat --json's lines): each
 * summary in it printed again, as a table or by site.  -1 when the file
 * is not one (a trace, then). */
static int stat_summaries(const char *path, bool as_json, const char *output)
{
	FILE *in = fopen(path, "re");
	int c = ' ';
	while (in && (c = fgetc(in)) != EOF && (c == ' ' || c == '\n'))
		;
	if (!in || c != '{') {
		if (in)
			fclose(in);
		return -1;
	}
	ungetc(c, in);
	FILE *out = output ? fopen(output, "we") : stdout;
	if (!out) {
		fprintf(stderr, "memtrace: stat: cannot write %s: %m\n", output);
		fclose(in);
		return 1;
	}
	int status = 0, n = 0;
	for (;;) {
		json_error_t jerr;
		json_t *s = json_loadf(in, JSON_DISABLE_EOF_CHECK, &jerr);
		if (!s) {
			while ((c = fgetc(in)) == ' ' || c == '\n')
				;
			if (c != EOF || !n) {
				fprintf(stderr, "memtrace: stat: %s: not a memtrace "
						"summary or trace (line %d: %s)\n",
					path, jerr.line, jerr.text);
				status = 1;
			}
			break;
		}
		n++;
		if (as_json) {
			json_dumpf(s, out, JSON_COMPACT);
			fputc('\n', out);
		} else {
			print_summary(out, s);
		}
		json_decref(s);
	}
	fclose(in);
	if (out != stdout && fclose(out) != 0)
		return 1;
	return status;
}

/* One process's recording, printed to out. */
static int stat_recording(const char *path, struct mt_pick pick, bool as_json,
			  bool salvage, FILE *out)
{
	char err[512];
	struct mt_trace *t = mt_trace_open_process(path, pick.pid, pick.image, err, sizeof err);
	if (!t) {
		fprintf(stderr, "memtrace: stat: %s: %s\n", path, err);
		return 1;
	}
	char *json = mt_replay_summary(t, salvage, err, sizeof err);
	const char *note = json ? mt_trace_note(t) : NULL;
	if (note)
		fprintf(stderr, "memtrace: stat: %s\n", note);
	mt_trace_close(t);
	if (!json) {
		fprintf(stderr, "memtrace: stat: %s: %s\n", path, err);
		return 1;
	}
	json_t *s = json_loads(json, 0, NULL);
	warn_partial(path, s);
	if (as_json)
		fprintf(out, "%s%s", json,
			json[0] && json[strlen(json) - 1] == '\n' ? "" : "\n");
	else
		print_summary(out, s);
	json_decref(s);
	free(json);
	return 0;
}

/* The trace, then what the rest of its command recorded beside it (its
 * children, its later images: trace_family.h), as stat -- CMD prints
 * every process the command started. */
static int stat_trace(const char *path, struct mt_pick pick, bool as_json, bool salvage,
		      const char *output)
{
	int summaries = stat_summaries(path, as_json, output);
	if (summaries >= 0)
		return summaries;
	FILE *out = output ? fopen(output, "we") : stdout;
	if (!out) {
		fprintf(stderr, "memtrace: stat: cannot write %s: %m\n", output);
		return 1;
	}
	int status = stat_recording(path, pick, as_json, salvage, out);
	char **family = status || pick.pid ? NULL : mt_trace_family(path);
	for (size_t i = 0; family && family[i]; i++)
		status |= stat_recording(family[i], (struct mt_pick){0}, as_json,
					 salvage, out);
	mt_trace_family_free(family);
	if (out != stdout && fclose(out) != 0)
		return 1;
	return status;
}

int mt_cmd_stat(int argc, char **argv)
{
	static const struct option options[] = {
		{"backend", required_argument, NULL, 'b'},
		{"json", no_argument, NULL, 'j'},
		{"output", required_argument, NULL, 'o'},
		{"salvage", no_argument, NULL, 's'},
		{"pid", required_argument, NULL, 'p'},
		{"by-site", no_argument, NULL, 'S'},
		{"depth", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct mt_pick pick = {0};
	struct mt_launch l = {MT_LAUNCH_DEFAULTS, .quiet = true};
	bool as_json = false, salvage = false;
	const char *output = NULL;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+b:jo:sp:Sd:h", options, NULL)) != -1) {
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
		case 's':
			salvage = true;
			break;
		case 'p':
			if (mt_parse_pick("stat", usage, optarg, &pick))
				return MT_EXIT_USAGE;
			break;
		case 'S':
			by_site = true;
			break;
		case 'd': {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);
			if (!*optarg || *end || n < 1 || n > 32)
				return mt_usage_error(usage, "stat: --depth '%s' is not "
						      "a number of frames from 1 "
						      "to 32", optarg);
			depth = (unsigned)n;
			break;
		}
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
	/* stat FILE: a recorded trace, not a command. */
	bool with_cmd = strcmp(argv[optind - 1], "--") == 0;
	/* (a trace, then options: a command's arguments they are not) */
	int misplaced = !with_cmd && mt_is_recording(argv[optind])
				? mt_options_after_files("stat", usage, argc, argv, optind)
				: 0;
	if (misplaced)
		return misplaced;
	int what = with_cmd || optind < argc - 1 ? A_COMMAND : classify(argv[optind]);
	if (what == A_TRACE)
		return stat_trace(argv[optind], pick, as_json, salvage, output);
	if (what == A_MISSING) {
		fprintf(stderr, "memtrace: stat: %s: no such file (a trace to read; "
				"a command to run goes after --)\n",
			argv[optind]);
		return 1;
	}

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
	bool measured = mt_measure(&l, argv + optind, &m);
	size_t i;
	json_t *summary;
	json_array_foreach(m.processes, i, summary) {
		if (as_json) {
			json_dumpf(summary, out, JSON_COMPACT);
			fputc('\n', out);
		} else {
			print_summary(out, summary);
		}
	}
	if (measured && m.signaled) { /* else measure said it */
		char status[64];
		fprintf(stderr, "memtrace: stat: '%s' was %s\n", argv[optind],
			mt_status_text(m.status, true, status, sizeof status));
	}
	mt_measured_free(&m);
	if (out != stderr && fclose(out) != 0) {
		fprintf(stderr, "memtrace: stat: writing %s failed: %m\n", output);
		return m.status ? m.status : 1;
	}
	return m.status;
}
