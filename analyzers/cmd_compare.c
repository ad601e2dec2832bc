#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "bare_times.h"
#include "cli.h"
#include "command.h"
#include "compare_page.h"
#include "figures.h"
#include "format.h"
#include "measure.h"
#include "record_run.h"
#include "replay_json.h"
#include "report_page.h"
#include "report_series.h"
#include "runs.h"
#include "shim_cost.h"
#include "trace_read.h"

static const char usage[] =
	"usage: memtrace compare [--backends B,B...] [--repeat N] [--json | "
	"--csv] [-o FILE]\n"
	"                        [--html FILE] -- CMD ARGS...\n"
	"\n"
	"Runs CMD under each backend, N times, interleaved (glibc, jemalloc,\n"
	"..., glibc, jemalloc, ...), and prints one table per region (or for\n"
	"the whole program when it marks none): time per call (min, and the\n"
	"median of medians), page faults, CPU time, each memory syscall per\n"
	"call, allocations and bytes per call, large blocks live at once, peak\n"
	"live bytes and peak RSS.  A backend that is not installed is skipped.\n"
	"\n"
	"  -b, --backends LIST  default: glibc,jemalloc,tcmalloc,mimalloc\n"
	"  -r, --repeat N       runs per backend (default 3)\n"
	"  -j, --json           the figures as JSON\n"
	"  -c, --csv            the figures as CSV (region,metric,backend,value)\n"
	"  -o, --output FILE    write there instead of stdout\n"
	"  -H, --html FILE      also one HTML page: the table, and one run of\n"
	"                       each backend recorded and drawn over time, on\n"
	"                       the same axes\n"
	"      --no-bare        do not time the command without the shim (by\n"
	"                       default N more runs per backend, the backend's\n"
	"                       library alone preloaded: the CPU each takes\n"
	"                       without memtrace, and what the shim cost it)\n"
	"  -h, --help           this text\n";

enum { MAX_BACKENDS = 8 };

/* One row of the table: a label, how to print, and where the value is. */
struct metric {
	const char *key, *label;
	enum { TIME, COUNT, BYTES, SHARE } kind;
	size_t offset;
	int sys; /* >= 0: syscalls[sys] instead of offset */
};

#define FIELD(name) offsetof(struct mt_call_figures, name)
static const struct metric metrics[] = {
	{"time_min_s", "time per call, min", TIME, FIELD(time_min_s), -1},
	{"time_median_s", "time per call, median", TIME, FIELD(time_median_s), -1},
	{"page_faults", "page faults per call", COUNT, FIELD(faults), -1},
	{"system_s", "system time per call", TIME, FIELD(system_s), -1},
	{"user_s", "user time per call", TIME, FIELD(user_s), -1},
	{"brk", "brk per call", COUNT, 0, MT_SYS_BRK},
	{"brk_grow", "  growing the heap", COUNT, FIELD(brk_grow), -1},
	{"brk_shrink", "  shrinking it", COUNT, FIELD(brk_shrink), -1},
	{"mmap", "mmap per call", COUNT, 0, MT_SYS_MMAP},
	{"munmap", "munmap per call", COUNT, 0, MT_SYS_MUNMAP},
	{"mremap", "mremap per call", COUNT, 0, MT_SYS_MREMAP},
	{"madvise", "madvise per call", COUNT, 0, MT_SYS_MADVISE},
	{"madv_dontneed", "  MADV_DONTNEED", COUNT, FIELD(dontneed), -1},
	{"madv_free", "  MADV_FREE", COUNT, FIELD(free_advice), -1},
	{"mprotect", "mprotect per call", COUNT, 0, MT_SYS_MPROTECT},
	{"allocations", "allocations per call", COUNT, FIELD(allocations), -1},
	{"bytes_allocated", "usable bytes allocated per call", BYTES,
	 FIELD(bytes_allocated), -1},
	{"large_allocations", "large blocks per call", COUNT, FIELD(large_allocs), -1},
	{"large_max_live", "large live at once, 1 thread", COUNT,
	 FIELD(large_max_live), -1},
	{"peak_live_bytes", "peak live bytes (process)", BYTES, FIELD(peak_live), -1},
	{"peak_rss_bytes", "peak RSS (process)", BYTES, FIELD(peak_rss), -1},
	{"shim_s", "shim's own time per call", TIME, FIELD(shim_s), -1},
	{"shim_share", "  of the cpu time (estimate)", SHARE, FIELD(shim_share), -1},
};

static double value_of(const struct metric *m, const struct mt_call_figures *f)
{
	if (m->sys >= 0)
		return f->syscalls[m->sys];
	return *(const double *)((const char *)f + m->offset);
}

static void format(char *buf, size_t len, const struct metric *m, double v)
{
	if (m->kind == TIME)
		mt_format_seconds(v, buf, len);
	else if (m->kind == BYTES)
		mt_format_bytes(v, buf, len);
	else if (m->kind == SHARE)
		snprintf(buf, len, "%.1f%%%s", 100 * v,
			 v > MT_SHIM_COST_MARK ? " *" : "");
	else
		mt_format_per_call(v, buf, len);
}


static void print_table(FILE *out, const char *region,
			const struct mt_runs *b, size_t nb)
{
	struct mt_call_figures f[MAX_BACKENDS];
	bool have[MAX_BACKENDS];
	double calls = 0;

	for (size_t i = 0; i < nb; i++)
		if ((have[i] = mt_runs_figures(&b[i], region, &f[i])))
			calls = f[i].calls;
	fprintf(out, "\nregion %s (%.0f calls per run, %zu runs per backend)\n",
		region, calls, b[0].n);
	fprintf(out, "  %-28s", "");
	for (size_t i = 0; i < nb; i++)
		fprintf(out, "%14s", b[i].backend);
	fputc('\n', out);
	for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++) {
		fprintf(out, "  %-28s", metrics[m].label);
		for (size_t i = 0; i < nb; i++) {
			char cell[32] = "-";
			if (have[i])
				format(cell, sizeof cell, &metrics[m],
				       value_of(&metrics[m], &f[i]));
			fprintf(out, "%14s", cell);
		}
		fputc('\n', out);
	}
	bool marked = false;
	for (size_t i = 0; i < nb; i++)
		marked |= have[i] && f[i].shim_share > MT_SHIM_COST_MARK;
	if (marked)
		fprintf(out, "  * the shim's own time, estimated from the cost "
			     "per call measured for each backend, is more than "
			     "%.0f%% of the cpu time: it may have moved these "
			     "figures\n",
			100 * MT_SHIM_COST_MARK);
}

/* The whole run's CPU on each backend without the shim, and what the
 * shim cost it, measured: its least CPU under the shim against bare. */
/* Whether the runs under the shim and without it measure the same thing:
 * a bare run's CPU (wait4's) counts the processes the command started and
 * waited for, the runs under the shim their command's own process's. */
static bool like_for_like(const struct mt_runs *b)
{
	return b->n && !json_array_size(b->children);
}

static double shim_cost_measured(const struct mt_runs *b,
				 const struct mt_bare_times *t)
{
	int i = mt_bare_fastest(t);
	double bare = i >= 0 ? t->cpu_s[i] : 0;
	return bare > 0 && b->n ? mt_runs_least_cpu(b) / bare - 1 : 0;
}

static void print_bare(FILE *out, const struct mt_runs *b,
		       const struct mt_bare_times *t, size_t nb)
{
	fprintf(out, "\nthe whole run without the shim (%zu runs per backend, "
		     "the backend's library alone preloaded)\n  %-28s",
		t[0].n, "");
	for (size_t i = 0; i < nb; i++)
		fprintf(out, "%14s", b[i].backend);
	static const char *const rows[] = {"cpu time, min", "cpu time, median",
					   "under the shim, min",
					   "the shim's cost, measured"};
	bool marked = false, noise = false;
	for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
		fprintf(out, "\n  %-28s", rows[r]);
		for (size_t i = 0; i < nb; i++) {
			char cell[32] = "-";
			int k = mt_bare_fastest(&t[i]);
			double cost = shim_cost_measured(&b[i], &t[i]);
			if (k < 0)
				;
			else if (r == 0)
				mt_format_seconds(t[i].cpu_s[k], cell, sizeof cell);
			else if (r == 1)
				mt_format_seconds(mt_bare_median(&t[i]), cell, sizeof cell);
			else if (r == 2 && like_for_like(&b[i]))
				mt_format_seconds(mt_runs_least_cpu(&b[i]), cell,
						  sizeof cell);
			else if (r == 3 && like_for_like(&b[i])) {
				snprintf(cell, sizeof cell, "%+.1f%%%s", 100 * cost,
					 cost > MT_SHIM_COST_MARK ? " *"
					 : cost < 0		  ? " ~"
								  : "");
				marked |= cost > MT_SHIM_COST_MARK;
				noise |= cost < 0;
			}
			fprintf(out, "%14s", cell);
		}
	}
	fputc('\n', out);
	for (size_t i = 0; i < nb; i++)
		if (b[i].n && !like_for_like(&b[i])) {
			fputs("  (the command started other processes: their CPU "
			      "is in the runs without the shim, not in the table's "
			      "figures of its own process; not compared)\n",
			      out);
			break;
		}
	if (marked)
		fprintf(out, "  * the shim took more than %.0f%% of the cpu time "
			     "(fastest run against fastest run): compare the "
			     "backends' times by this table's first row, \"cpu "
			     "time, min\" of the runs without the shim, and the "
			     "other figures knowing that\n",
			100 * MT_SHIM_COST_MARK);
	if (noise)
		fputs("  ~ less under the shim than without it: the runs vary "
		      "more than the shim costs (other work on the machine; "
		      "compare min and median): not a measure of its cost\n",
		      out);
}

/* Each region's fastest call against the first region's, per backend:
 * the "func2 is 3x slower than func1" line. */
static void print_ratios(FILE *out, const char **regions, size_t nr,
			 const struct mt_runs *b, size_t nb)
{
	struct mt_call_figures base, f;
	if (nr < 2)
		return;
	fprintf(out, "\nmin time per call relative to %s\n  %-28s", regions[0], "");
	for (size_t i = 0; i < nb; i++)
		fprintf(out, "%14s", b[i].backend);
	fputc('\n', out);
	for (size_t r = 1; r < nr; r++) {
		char label[64];
		snprintf(label, sizeof label, "%s / %s", regions[r], regions[0]);
		fprintf(out, "  %-28s", label);
		for (size_t i = 0; i < nb; i++) {
			char cell[32] = "-";
			if (mt_runs_figures(&b[i], regions[0], &base) &&
			    mt_runs_figures(&b[i], regions[r], &f) && base.time_min_s > 0)
				snprintf(cell, sizeof cell, "%.2fx",
					 f.time_min_s / base.time_min_s);
			fprintf(out, "%14s", cell);
		}
		fputc('\n', out);
	}
}

static void print_tables(FILE *out, const char **regions, size_t nr,
			 struct mt_runs *b, const struct mt_bare_times *bare,
			 size_t nb, long repeat)
{
	fprintf(out, "memtrace compare: %zu backends x %ld runs\n", nb, repeat);
	/* The table is the command's own process: where it started others
	 * (a fork's workers), their work is not in it, and a backend can look
	 * faster or slower for what the table does not show. */
	for (size_t i = 0; i < nb; i++)
		if (json_array_size(b[i].children)) {
			fprintf(out, "(the command started %zu other processes on "
				     "%s: the table is of its own process only; "
				     "memtrace stat and explain -- CMD show each)\n",
				json_array_size(b[i].children), b[i].backend);
			break;
		}
	for (size_t r = 0; r < nr; r++)
		print_table(out, regions[r], b, nb);
	print_ratios(out, regions, nr, b, nb);
	if (bare)
		print_bare(out, b, bare, nb);
}

static json_t *bare_json(const struct mt_runs *b,
			 const struct mt_bare_times *t, size_t nb)
{
	json_t *o = json_object();
	for (size_t i = 0; i < nb; i++) {
		int k = mt_bare_fastest(&t[i]);
		if (k < 0)
			continue;
		double cost = shim_cost_measured(&b[i], &t[i]);
		json_t *x = json_pack("{s:I, s:f, s:f}", "runs", (json_int_t)t[i].n,
				      "cpu_min_s", t[i].cpu_s[k], "cpu_median_s",
				      mt_bare_median(&t[i]));
		if (like_for_like(&b[i])) {
			json_object_set_new(x, "shim_cpu_min_s",
					    json_real(mt_runs_least_cpu(&b[i])));
			json_object_set_new(x, "shim_cost_share", json_real(cost));
			json_object_set_new(x, "shim_moved_figures",
					    json_boolean(cost > MT_SHIM_COST_MARK));
		}
		json_object_set_new(o, b[i].backend, x);
	}
	return o;
}

static json_t *as_json(const char **regions, size_t nr,
		       const struct mt_runs *b, const struct mt_bare_times *bare,
		       size_t nb)
{
	json_t *list = json_array();
	for (size_t r = 0; r < nr; r++) {
		json_t *backends = json_object();
		for (size_t i = 0; i < nb; i++) {
			struct mt_call_figures f;
			if (!mt_runs_figures(&b[i], regions[r], &f))
				continue;
			json_t *o = json_object();
			json_object_set_new(o, "calls", json_real(f.calls));
			json_object_set_new(o, "runs", json_integer((json_int_t)b[i].n));
			for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++)
				json_object_set_new(o, metrics[m].key,
						    json_real(value_of(&metrics[m], &f)));
			json_object_set_new(o, "shim_moved_figures",
					    json_boolean(f.shim_share >
							 MT_SHIM_COST_MARK));
			json_object_set_new(backends, b[i].backend, o);
		}
		json_t *reg = json_object();
		json_object_set_new(reg, "name", json_string(regions[r]));
		json_object_set_new(reg, "backends", backends);
		json_array_append_new(list, reg);
	}
	json_t *top = json_object();
	json_object_set_new(top, "regions", list);
	if (bare)
		json_object_set_new(top, "without_shim", bare_json(b, bare, nb));
	return top;
}

static void print_csv(FILE *out, const char **regions, size_t nr,
		      const struct mt_runs *b, const struct mt_bare_times *bare,
		      size_t nb)
{
	fputs("region,metric,backend,value\n", out);
	for (size_t r = 0; r < nr; r++)
		for (size_t i = 0; i < nb; i++) {
			struct mt_call_figures f;
			if (!mt_runs_figures(&b[i], regions[r], &f))
				continue;
			for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++)
				fprintf(out, "\"%s\",%s,%s,%.9g\n", regions[r],
					metrics[m].key, b[i].backend,
					value_of(&metrics[m], &f));
		}
	for (size_t i = 0; bare && i < nb; i++) {
		int k = mt_bare_fastest(&bare[i]);
		if (k < 0)
			continue;
		fprintf(out, "\"(without the shim)\",cpu_min_s,%s,%.9g\n",
			b[i].backend, bare[i].cpu_s[k]);
		if (like_for_like(&b[i]))
			fprintf(out, "\"(without the shim)\",shim_cost_share,%s,%.9g\n",
				b[i].backend, shim_cost_measured(&b[i], &bare[i]));
	}
}

/* The backends of the list that are installed (a note for the others). */
/* One more run of argv on a backend, recorded: its summary and series. */
static json_t *recorded_run(const char *backend, char *const argv[])
{
	char dir[] = "/tmp/memtrace-compare.XXXXXX", err[512];
	if (!mkdtemp(dir)) {
		perror("memtrace: compare: cannot create a temporary directory");
		return NULL;
	}
	json_t *run = NULL;
	int status; /* (compare's own status says whether runs failed) */
	char *trace = mt_record_run("compare", backend, argv, dir, &status);
	struct mt_trace *t = trace ? mt_trace_open(trace, err, sizeof err) : NULL;
	if (trace && !t)
		fprintf(stderr, "memtrace: compare: %s: %s\n", trace, err);
	if (t) {
		char *text = mt_replay_summary(t, false, err, sizeof err);
		json_t *summary = text ? json_loads(text, 0, NULL) : NULL;
		free(text);
		json_t *series = summary ? mt_report_series(t, err, sizeof err) : NULL;
		if (summary && series)
			run = json_pack("{s:s, s:O, s:O}", "backend", backend,
					"summary", summary, "series", series);
		else
			fprintf(stderr, "memtrace: compare: %s: %s\n", trace, err);
		json_decref(summary);
		json_decref(series);
		mt_trace_close(t);
	}
	free(trace);
	mt_remove_run_dir(dir);
	return run;
}

/* --html: the table and a recorded run of each backend that ran. */
static bool write_html(const char *path, const char *table, struct mt_runs *b,
		       size_t nb, char *const argv[])
{
	json_t *runs = json_array();
	for (size_t i = 0; i < nb; i++) {
		if (!b[i].n)
			continue;
		fprintf(stderr, "memtrace: compare: recording a run on %s for "
				"the page\n",
			b[i].backend);
		json_t *run = recorded_run(b[i].backend, argv);
		if (run)
			json_array_append_new(runs, run);
	}
	FILE *out = fopen(path, "we");
	bool ok = out && mt_compare_page(out, table, runs, MT_CHARTJS);
	if (!out)
		fprintf(stderr, "memtrace: compare: cannot write %s: %m (choose a "
				"writable path for --html)\n",
			path);
	if (out && fclose(out) != 0 && ok) {
		fprintf(stderr, "memtrace: compare: writing %s failed: %m\n", path);
		ok = false;
	}
	json_decref(runs);
	if (ok)
		fprintf(stderr, "memtrace: compare: %s\n", path);
	return ok;
}

/* The backends of the list that are installed (one not installed is
 * skipped, and said); -1 where a name is no backend's at all, a typo that
 * would leave a comparison of one (new-user trial 31), said by
 * mt_launch_check. */
static long usable_backends(char *list, struct mt_runs *out)
{
	long n = 0;
	for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
		struct mt_launch l = {MT_LAUNCH_DEFAULTS, .backend = name};
		if (n == MAX_BACKENDS)
			break;
		bool known = mt_backend_is_path(name) || mt_backend_by_name(name);
		if (!mt_launch_check(&l)) {
			if (!known)
				return -1;
			fprintf(stderr, "memtrace: compare: skipping %s\n", name);
			continue;
		}
		out[n++] = (struct mt_runs){.backend = name};
	}
	return n;
}

int mt_cmd_compare(int argc, char **argv)
{
	static const struct option options[] = {
		{"backends", required_argument, NULL, 'b'},
		{"repeat", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"csv", no_argument, NULL, 'c'},
		{"output", required_argument, NULL, 'o'},
		{"html", required_argument, NULL, 'H'},
		{"no-bare", no_argument, NULL, 'B'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	char default_list[] = "glibc,jemalloc,tcmalloc,mimalloc";
	char *list = default_list;
	const char *output = NULL, *html = NULL;
	long repeat = 3;
	bool json = false, csv = false, timed_bare = true;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+b:r:jco:H:Bh", options, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'b':
			list = optarg;
			break;
		case 'r':
			repeat = strtol(optarg, &end, 10);
			if (*end || repeat < 1 || repeat > MT_MAX_RUNS)
				return mt_usage_error(usage, "compare: --repeat needs a "
							     "number from 1 to %d",
						      MT_MAX_RUNS);
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			csv = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'H':
			html = optarg;
			break;
		case 'B':
			timed_bare = false;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return mt_usage_error(usage, "compare: unknown or incomplete "
						     "option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return mt_usage_error(usage, "compare: no command given");
	if (json && csv)
		return mt_usage_error(usage, "compare: --json or --csv, not both");
	/* Said once here, not once per backend and run. */
	int status;
	if (!mt_command_check("compare", argv[optind], &status))
		return status;

	struct mt_runs b[MAX_BACKENDS];
	long found = usable_backends(list, b);
	if (found < 0)
		return MT_EXIT_USAGE;
	size_t nb = (size_t)found;
	if (!nb) {
		fprintf(stderr, "memtrace: compare: no backend to run on\n");
		return MT_EXIT_USAGE;
	}
	FILE *out = stdout;
	if (output && !(out = fopen(output, "we"))) {
		fprintf(stderr, "memtrace: compare: cannot write %s: %m (choose a "
				"writable path for -o)\n",
			output);
		return MT_EXIT_USAGE;
	}

	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int failures = mt_runs_repeat(b, nb, repeat, argv + optind, NULL, devnull,
				      "compare", isatty(STDERR_FILENO));
	struct mt_bare_times bare[MAX_BACKENDS] = {0};
	if (timed_bare) {
		for (size_t i = 0; i < nb; i++)
			bare[i].backend = b[i].backend;
		mt_bare_repeat(bare, nb, repeat, argv + optind,
			       mt_runs_command_ending(), devnull);
	}
	const struct mt_bare_times *timed = timed_bare ? bare : NULL;
	if (devnull >= 0)
		close(devnull);

	const char **regions = NULL;
	size_t nr = 0;
	for (size_t i = 0; i < nb && !nr; i++)
		if (b[i].n) {
			json_t *s = b[i].summaries[0];
			size_t max = json_array_size(json_object_get(s, "regions")) + 1;
			if ((regions = calloc(max, sizeof *regions)))
				nr = mt_region_names(s, regions, max);
		}
	if (!nr) {
		fprintf(stderr, "memtrace: compare: no run succeeded\n");
		return 1;
	}
	if (json) {
		json_t *j = as_json(regions, nr, b, timed, nb);
		json_dumpf(j, out, JSON_INDENT(2));
		fputc('\n', out);
		json_decref(j);
	} else if (csv) {
		print_csv(out, regions, nr, b, timed, nb);
	} else {
		print_tables(out, regions, nr, b, timed, nb, repeat);
	}
	bool drawn = true;
	if (html) {
		char *table = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&table, &len);
		if (mem) {
			print_tables(mem, regions, nr, b, timed, nb, repeat);
			fclose(mem);
		}
		drawn = table && write_html(html, table, b, nb, argv + optind);
		free(table);
	}
	free(regions);
	for (size_t i = 0; i < nb; i++)
		mt_runs_release(&b[i]);
	if (out != stdout && fclose(out) != 0) {
		fprintf(stderr, "memtrace: compare: writing %s failed: %m\n", output);
		return 1;
	}
	return failures || !drawn ? 1 : 0;
}
