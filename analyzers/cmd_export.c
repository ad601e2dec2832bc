/* memtrace export: a recording in another tool's format.  So far the
 * folded stacks of flamegraph.pl and speedscope ("collapsed"): one line per
 * call site of large blocks, its frames outermost first. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export_perfetto.h"
#include "export_pprof.h"
#include "replay_json.h"
#include "sites.h"
#include "symbolize.h"
#include "trace_read.h"

static const char usage[] =
	"usage: memtrace export --format collapsed|perfetto|pprof [--value V] [-o FILE]\n"
	"                       [--pid PID[.N]] [--salvage] TRACE\n"
	"\n"
	"Writes a recording in another tool's format.\n"
	"collapsed: the folded stacks of flamegraph.pl and speedscope, one line\n"
	"per call site of large blocks (128 KiB or more: the blocks whose sites\n"
	"the shim follows), its frames outermost first, then the value.\n"
	"perfetto: Perfetto's protobuf trace (open it in ui.perfetto.dev): a\n"
	"track per thread with its regions' calls as slices and each memory\n"
	"syscall as an instant event with its arguments, and counter tracks for\n"
	"the heap's size, resident and live memory, and sampled page faults.\n"
	"pprof: the call sites of large blocks as a gzipped profile.proto (for\n"
	"pprof, speedscope, Perfetto): blocks, bytes, and the bytes the\n"
	"allocator moved on their account, by stack (needs -o).\n"
	"\n"
	"  -f, --format F     collapsed, perfetto or pprof\n"
	"  -v, --value V      bytes (allocated, the default), blocks, or\n"
	"                     caused (the bytes the allocator gave back to or\n"
	"                     took from the kernel on the site's account)\n"
	"  -o, --output FILE  write there instead of stdout\n"
	"  -p, --pid PID[.N]  the process of an LTTng trace (default: the first)\n"
	"  -s, --salvage      skip damaged chunks and read the rest\n"
	"  -h, --help         this text\n";

/* A frame's label, with the separators of the format taken out. */
static void put_frame(FILE *out, json_t *frame)
{
	char label[512];
	/* a function once, wherever in it the call was (a flame graph sums
	 * by name) */
	json_t *f = json_deep_copy(frame);
	json_object_del(f, "function_offset");
	mt_frame_label(f, label, sizeof label);
	json_decref(f);
	for (char *c = label; *c; c++)
		if (*c == ';' || *c == '\n')
			*c = ',';
	fputs(label, out);
}

static double value_of(json_t *site, const char *value)
{
	json_t *large = json_object_get(site, "large");
	if (!strcmp(value, "blocks"))
		return json_number_value(json_object_get(large, "allocations"));
	if (!strcmp(value, "bytes"))
		return json_number_value(json_object_get(large, "bytes"));
	double caused = 0;
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(site, "caused"), k, v) {
		size_t n = strlen(k);
		if (n > 6 && !strcmp(k + n - 6, "_bytes"))
			caused += json_number_value(v);
	}
	return caused;
}

/* A site's stack as a folded line's frames, outermost first.  A stack
 * that lists its Python frames first (recorded before stacks were
 * interleaved): them, then the native ones (innermost of all: the code
 * that called the allocator); else, innermost first throughout,
 * reversed. */
static void put_stack(FILE *out, json_t *site)
{
	json_t *stack = json_object_get(site, "stack");
	size_t n = json_array_size(stack), py = 0;
	while (py < n && !strcmp(json_string_value(json_object_get(
			       json_array_get(stack, py), "kind")) ?: "",
			 "python"))
		py++;
	bool first = true;
	/* (a stack the shim cut: its outermost frame is not the root) */
	if (json_is_true(json_object_get(site, "stack_cut"))) {
		fputs("[deeper frames not recorded]", out);
		first = false;
	}
	for (size_t d = py; d-- > 0; first = false) {
		fputs(first ? "" : ";", out);
		put_frame(out, json_array_get(stack, d));
	}
	for (size_t d = n; d-- > py; first = false) {
		fputs(first ? "" : ";", out);
		put_frame(out, json_array_get(stack, d));
	}
}

/* One line per stack as it reads: sites whose frames read the same (two
 * places in one line of a function) summed, in the order first seen (a
 * NumPy program's `ones (numeric.py:205)` stack was written twice; new-user
 * trial 32). */
static int collapsed(FILE *out, json_t *summary, const char *value)
{
	json_t *sums = json_object(), *order = json_array();
	size_t i;
	json_t *site;
	json_array_foreach(json_object_get(summary, "sites"), i, site) {
		json_t *stack = json_object_get(site, "stack");
		double v = value_of(site, value);
		if (!json_array_size(stack) || v < 1)
			continue;
		char *line = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&line, &len);
		if (!m)
			break;
		put_stack(m, site);
		fclose(m);
		json_t *sum = json_object_get(sums, line);
		if (!sum)
			json_array_append_new(order, json_string(line));
		json_object_set_new(sums, line, json_real(json_number_value(sum) + v));
		free(line);
	}
	json_t *key;
	json_array_foreach(order, i, key) {
		const char *line = json_string_value(key);
		fprintf(out, "%s %.0f\n", line,
			json_number_value(json_object_get(sums, line)));
	}
	if (!json_array_size(order))
		fprintf(stderr, "memtrace: export: no call sites of large blocks (128 "
				"KiB or more) in this recording: nothing to fold\n");
	json_decref(sums);
	json_decref(order);
	return ferror(out) ? 1 : 0;
}

static int to_perfetto(struct mt_trace *t, json_t *summary, const char *path,
		       const char *output)
{
	char err[512];
	if (!output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "memtrace: export: a Perfetto trace is binary: "
				"give -o FILE\n");
		return MT_EXIT_USAGE;
	}
	FILE *out = output ? fopen(output, "we") : stdout;
	if (!out) {
		fprintf(stderr, "memtrace: export: cannot write %s: %m (choose a "
				"writable path for -o)\n",
			output);
		return 1;
	}
	bool ok = mt_export_perfetto(out, t, summary, err, sizeof err);
	if (!ok)
		fprintf(stderr, "memtrace: export: %s: %s\n", path, err);
	if (out != stdout && fclose(out) != 0)
		ok = false;
	return ok ? 0 : 1;
}

int mt_cmd_export(int argc, char **argv)
{
	static const struct option options[] = {
		{"format", required_argument, NULL, 'f'},
		{"value", required_argument, NULL, 'v'},
		{"output", required_argument, NULL, 'o'},
		{"pid", required_argument, NULL, 'p'},
		{"salvage", no_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *format = NULL, *value = "bytes", *output = NULL;
	struct mt_pick pick = {0};
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "f:v:o:p:sh", options, NULL)) != -1) {
		switch (opt) {
		case 'f':
			format = optarg;
			break;
		case 'v':
			value = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'p':
			if (mt_parse_pick("export", usage, optarg, &pick))
				return MT_EXIT_USAGE;
			break;
		case 's':
			pick.salvage = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return mt_usage_error(usage, "export: unknown or incomplete "
						     "option '%s'",
					      argv[optind - 1]);
		}
	}
	bool perfetto = format && !strcmp(format, "perfetto");
	bool pprof = format && !strcmp(format, "pprof");
	if (!format || (!perfetto && !pprof && strcmp(format, "collapsed") != 0))
		return mt_usage_error(usage, "export: --format is collapsed, perfetto "
					     "or pprof (got '%s')",
				      format ? format : "none");
	if (pprof && !output)
		return mt_usage_error(usage, "export: --format pprof needs -o FILE");
	if (strcmp(value, "bytes") && strcmp(value, "blocks") && strcmp(value, "caused"))
		return mt_usage_error(usage, "export: --value is bytes, blocks or "
					     "caused (got '%s')",
				      value);
	if (optind != argc - 1)
		return mt_usage_error(usage, "export: give one trace");
	const char *path = argv[optind];
	char err[512];
	struct mt_trace *t = mt_is_recording(path)
				     ? mt_trace_open_process(path, pick.pid, pick.image,
							     err, sizeof err)
				     : NULL;
	if (!t) {
		fprintf(stderr, "memtrace: export: %s: %s\n", path,
			mt_is_recording(path)	     ? err
			: access(path, F_OK) != 0 ? "no such file (give a trace: "
						    "MEMTRACE_OUT or memtrace run "
						    "-o write one)"
						  : "not a memtrace trace (MEMTRACE_OUT "
						    "or memtrace run -o write one)");
		return 1;
	}
	if (pick.salvage)
		mt_trace_salvage(t);
	char *text = mt_replay_summary(t, false, err, sizeof err);
	json_t *summary = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (!summary) {
		fprintf(stderr, "memtrace: export: %s: %s\n", path, err);
		mt_trace_close(t);
		return 1;
	}
	if (perfetto) {
		int rc = to_perfetto(t, summary, path, output);
		mt_trace_close(t);
		json_decref(summary);
		return rc;
	}
	mt_trace_close(t);
	if (!json_object_get(summary, "sites"))
		fprintf(stderr, "memtrace: export: %s has no sites (recorded with "
				"MEMTRACE_SITES=0, or without its closing record)\n",
			path);
	mt_sites_symbolize(summary);
	if (pprof) {
		bool ok = mt_export_pprof(output, summary, err, sizeof err);
		if (!ok)
			fprintf(stderr, "memtrace: export: %s\n", err);
		json_decref(summary);
		return ok ? 0 : 1;
	}
	FILE *out = output ? fopen(output, "we") : stdout;
	if (!out) {
		fprintf(stderr, "memtrace: export: cannot write %s: %m (choose a "
				"writable path for -o)\n",
			output);
		json_decref(summary);
		return 1;
	}
	int rc = collapsed(out, summary, value);
	json_decref(summary);
	if (out != stdout && fclose(out) != 0)
		rc = 1;
	return rc;
}
