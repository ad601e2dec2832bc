#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace_read.h"

static const char usage[] =
	"usage: memtrace dump [--salvage] [--pid PID[.N]] TRACE\n"
	"\n"
	"Prints a trace (MEMTRACE_OUT, memtrace run -o, or the directory of an\n"
	"LTTng trace) one event per line: seconds since the first event,\n"
	"thread, event, fields as name=value, after the metadata and the status\n"
	"record (format 1.8: how recording ended).  A damaged file is an error\n"
	"naming the offset; with --salvage the damaged chunks are skipped (and\n"
	"counted) instead.  What a stopped writer left (a file that ends inside\n"
	"a chunk, places never written) is read up to there, and said.\n"
	"\n"
	"  -s, --salvage  skip damaged chunks (in an LTTng trace: go on past\n"
	"                 events LTTng discarded)\n"
	"  -p, --pid PID[.N]  the process of an LTTng trace to print (default:\n"
	"                 the first one started); .N: its image after N execs\n"
	"  -h, --help     this text\n";

/* The i-th field name of an event (trace_events.h), or NULL. */
static const char *field_name(int tag, int i, char *buf, size_t len)
{
	const char *names = mt_event_kinds[tag].field_names;
	for (; i > 0 && names; i--)
		if ((names = strchr(names, ',')))
			names += 2; /* ", " */
	if (!names || !*names || mt_event_kinds[tag].wire == MT_WIRE_ARRAY)
		return NULL;
	size_t n = strcspn(names, ",");
	snprintf(buf, len, "%.*s", (int)n, names);
	return buf;
}

static bool is_address_field(const char *name)
{
	static const char *const addresses[] = {"ptr", "old_ptr", "addr", "ip",
						"from", "to"};
	for (size_t i = 0; i < sizeof addresses / sizeof *addresses; i++)
		if (!strcmp(name, addresses[i]))
			return true;
	return false;
}

/* A kernel-side syscall: entry with arguments, or exit with result. */
static void print_kcall(FILE *out, const struct mt_event *e)
{
	const struct mt_ev_kernel_call *k = &e->kernel_call;
	unsigned sys = (unsigned)(k->which & 15);
	bool exit = (k->which >> 4) & 1;
	fprintf(out, " tid=%" PRIu64 " sys=%s %s time_ns=%" PRIu64, k->tid,
		sys < MT_SYS_COUNT ? mt_sys_names[sys] : "?", exit ? "exit" : "enter",
		k->time_ns);
	if (exit && e->nv > 3)
		fprintf(out, " result=%" PRId64, mt_unzigzag_value(k->arg0));
	else
		for (int i = 3; i < e->nv; i++)
			fprintf(out, " arg%d=0x%" PRIx64, i - 3, e->v[i]);
	fputc('\n', out);
}

static bool print(const struct mt_event *e, void *arg)
{
	FILE *out = arg;
	if (e->tag == MT_EV_KCALL) {
		fprintf(out, "%.9f %u %s", (double)e->ns / 1e9, e->tid,
			mt_event_name(e->tag));
		print_kcall(out, e);
		return !ferror(out);
	}
	fprintf(out, "%.9f %u %s", (double)e->ns / 1e9, e->tid, mt_event_name(e->tag));
	for (int i = 0; i < e->nv; i++) {
		char buf[32];
		const char *name = field_name(e->tag, i, buf, sizeof buf);
		uint64_t v = e->v[i];
		if (!name) {
			fprintf(out, " %" PRIu64, v);
		} else if (!strcmp(name, "entry") && v < MT_CALL_COUNT) {
			fprintf(out, " entry=%s", mt_call_names[v]);
		} else if (!strcmp(name, "sys") && v < MT_SYS_COUNT) {
			fprintf(out, " sys=%s", mt_sys_names[v]);
		} else if (e->tag == MT_EV_THREAD_START && (v & MT_SHIM_THREAD)) {
			fprintf(out, " %s=%" PRIu64 " memtrace", name, v & ~MT_SHIM_THREAD);
		} else if (!strcmp(name, "result")) {
			fprintf(out, " result=%" PRId64, mt_unzigzag_value(v));
		} else if (is_address_field(name)) {
			fprintf(out, " %s=0x%" PRIx64, name, v);
		} else {
			fprintf(out, " %s=%" PRIu64, name, v);
		}
	}
	/* Text on the same line: newlines become spaces. */
	if (e->text) {
		fputc(' ', out);
		for (size_t i = 0; i < e->text_len; i++)
			fputc(e->text[i] == '\n' ? ' ' : e->text[i], out);
	}
	fputc('\n', out);
	return !ferror(out);
}

/* The status record as the file holds it (format 1.8). */
static void print_status(const struct mt_trace *t)
{
	static const char *const ends[MT_END_COUNT] = {
		"recording", "exit", "exec", "_exit", "signal", "write_failed"};
	struct mt_trace_status st;
	bool damaged;
	if (mt_trace_status(t, &st, &damaged))
		printf("# status end=%s value=%" PRId32 " at=%" PRIu64 " lost=%" PRIu64
		       "\n",
		       st.end < MT_END_COUNT ? ends[st.end] : "?", st.value, st.at,
		       st.lost);
	else
		printf("# status %s\n",
		       damaged ? "damaged (the record does not read whole)"
			       : "none (a file before format 1.8, or LTTng's)");
}

/* What a stopped writer left: not damage, but said. */
static void print_end(const char *path, const struct mt_trace *t)
{
	uint64_t first, unwritten = mt_trace_unwritten(t, &first);
	if (unwritten)
		fprintf(stderr, "memtrace: dump: %s: %" PRIu64 " bytes from offset %" PRIu64
				" were never written (places reserved by threads "
				"that were stopped before writing their chunks)\n",
			path, unwritten, first);
	if (mt_trace_truncated(t))
		fprintf(stderr, "memtrace: dump: %s: the file ends inside a chunk at "
				"offset %" PRIu64 " (the writer was stopped: disk full "
				"or killed); the chunks before it are printed\n",
			path, mt_trace_truncated(t));
}

int mt_cmd_dump(int argc, char **argv)
{
	static const struct option options[] = {
		{"salvage", no_argument, NULL, 's'},
		{"pid", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	bool salvage = false;
	struct mt_pick pick = {0};
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "sp:h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			salvage = true;
			break;
		case 'p':
			if (mt_parse_pick("dump", usage, optarg, &pick))
				return MT_EXIT_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return mt_usage_error(usage, "dump: unknown option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return mt_usage_error(usage, "dump: give one trace file");

	char err[512];
	const char *path = argv[optind];
	struct mt_trace *t = mt_trace_open_process(path, pick.pid, pick.image, err, sizeof err);
	if (!t) {
		fprintf(stderr, "memtrace: dump: %s: %s\n", path, err);
		return 1;
	}
	char *meta = json_dumps(mt_trace_metadata(t), JSON_COMPACT);
	printf("# %s\n# start_ns %" PRIu64 "\n", meta ? meta : "{}",
	       mt_trace_start_ns(t));
	free(meta);
	print_status(t);
	bool ok = mt_trace_each(t, salvage, print, stdout, err, sizeof err);
	if (!ok)
		fprintf(stderr, "memtrace: dump: %s: %s (--salvage skips damaged "
				"chunks)\n",
			path, err);
	else if (mt_trace_skipped(t))
		fprintf(stderr, "memtrace: dump: %s: %" PRIu64 " %s skipped\n",
			path, mt_trace_skipped(t), mt_trace_skipped_what(t));
	const char *note = ok ? mt_trace_note(t) : NULL;
	if (note)
		fprintf(stderr, "memtrace: dump: %s\n", note);
	if (ok)
		print_end(path, t);
	mt_trace_close(t);
	return ok ? 0 : 1;
}
