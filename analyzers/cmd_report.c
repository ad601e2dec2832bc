/* memtrace report: a recording as one HTML page (report_page.c), its
 * series (report_series.c), its summary and explain's findings. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "command.h"
#include "explain.h"
#include "launch.h"
#include "record_run.h"
#include "replay_json.h"
#include "report_page.h"
#include "report_series.h"
#include "trace_read.h"

static const char usage[] =
	"usage: memtrace report [-o FILE] [--pid PID[.N]] [--salvage] TRACE\n"
	"       memtrace report [-o FILE] [--backend B] -- CMD ARGS...\n"
	"\n"
	"One HTML page that opens offline: the run, explain's findings with\n"
	"their evidence and fixes, the regions, and charts over time of the\n"
	"heap (the program break), resident and live memory, the memory\n"
	"system calls and the sampled page faults, with the regions' calls\n"
	"shaded.  Reads a trace (MEMTRACE_OUT, or the directory of an LTTng\n"
	"trace), or records CMD's first; then the exit status is CMD's once\n"
	"the page is written.\n"
	"\n"
	"  -o, --output FILE   the page (default: report.html)\n"
	"  -b, --backend B     the allocator to record CMD on (default: glibc)\n"
	"  -p, --pid PID[.N]   the process of an LTTng trace (default: the\n"
	"                      first one started); .N: its image after N execs\n"
	"  -s, --salvage       with a TRACE: skip damaged chunks and read the\n"
	"                      rest (the figures then say they are partial)\n"
	"  -h, --help          this text\n";

static int write_report(const char *trace, struct mt_pick pick, const char *output)
{
	char err[512];
	struct mt_trace *t = mt_trace_open_process(trace, pick.pid, pick.image, err,
						   sizeof err);
	if (!t) {
		fprintf(stderr, "memtrace: report: %s: %s\n", trace, err);
		return 1;
	}
	if (pick.salvage)
		mt_trace_salvage(t);
	char *text = mt_replay_summary(t, false, err, sizeof err);
	json_t *summary = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	json_t *series = summary ? mt_report_series(t, err, sizeof err) : NULL;
	mt_trace_close(t);
	if (!summary || !series) {
		fprintf(stderr, "memtrace: report: %s: %s\n", trace, err);
		json_decref(summary);
		return 1;
	}
	json_t *findings = mt_explain_summary(summary, trace);
	FILE *out = fopen(output, "we");
	bool ok = out && mt_report_page(out, summary, findings, series, MT_CHARTJS);
	if (!out)
		fprintf(stderr, "memtrace: report: cannot write %s: %m (choose a "
				"writable path for -o)\n",
			output);
	if (out && fclose(out) != 0 && ok) {
		fprintf(stderr, "memtrace: report: writing %s failed: %m\n", output);
		ok = false;
	}
	json_decref(summary);
	json_decref(series);
	json_decref(findings);
	if (ok)
		fprintf(stderr, "memtrace: report: %s\n", output);
	return ok ? 0 : 1;
}

int mt_cmd_report(int argc, char **argv)
{
	static const struct option options[] = {
		{"output", required_argument, NULL, 'o'},
		{"backend", required_argument, NULL, 'b'},
		{"pid", required_argument, NULL, 'p'},
		{"salvage", no_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *output = "report.html", *backend = NULL;
	struct mt_pick pick = {0};
	int opt, status;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+o:b:p:sh", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case 'b':
			backend = optarg;
			break;
		case 'p':
			if (mt_parse_pick("report", usage, optarg, &pick))
				return MT_EXIT_USAGE;
			break;
		case 's':
			pick.salvage = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return mt_usage_error(usage, "report: unknown or incomplete "
						     "option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return mt_usage_error(usage, "report: give a trace or -- CMD");
	bool with_cmd = strcmp(argv[optind - 1], "--") == 0;
	if (!with_cmd) {
		if ((status = mt_options_after_files("report", usage, argc, argv,
						     optind)))
			return status;
		if (optind + 1 < argc)
			return mt_usage_error(usage, "report: one trace at a time");
		if (!mt_is_recording(argv[optind])) {
			if (access(argv[optind], F_OK) != 0)
				fprintf(stderr, "memtrace: report: %s: no such file "
						"(give a trace: MEMTRACE_OUT or memtrace "
						"run -o write one)\n",
					argv[optind]);
			else
				fprintf(stderr, "memtrace: report: %s is not a memtrace "
						"trace (MEMTRACE_OUT or memtrace run -o "
						"write one)\n",
					argv[optind]);
			return 1;
		}
		return write_report(argv[optind], pick, output);
	}
	if (!mt_command_check("report", argv[optind], &status))
		return status;
	char dir[] = "/tmp/memtrace-report.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("memtrace: report: cannot create a temporary directory");
		return 1;
	}
	/* (the page is written, and the status is the command's, as
	 * stat's is) */
	char *trace = mt_record_run("report", backend, argv + optind, dir, &status);
	int rc = trace ? write_report(trace, pick, output) : 1;
	if (rc == 0)
		rc = status;
	free(trace);
	mt_remove_run_dir(dir);
	return rc;
}
