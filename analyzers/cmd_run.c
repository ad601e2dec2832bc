#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "launch.h"
#include "lttng_session.h"

static const char usage[] =
	"usage: memtrace run [--backend B] [--summary FILE] [-o TRACE [--force] "
	"[--compress]]\n"
	"                    [--quiet] -- CMD ARGS...\n"
	"       memtrace run --lttng [-o DIR] [--backend B] [--quiet] -- CMD "
	"ARGS...\n"
	"\n"
	"Runs CMD with libmemtrace.so preloaded, on the allocator B (glibc,\n"
	"jemalloc, tcmalloc, mimalloc, or the path of a malloc library).  At\n"
	"exit each process prints a summary on stderr and, with --summary,\n"
	"writes it as JSON to FILE ('%p' in FILE stands for the pid).\n"
	"The exit status is CMD's.\n"
	"\n"
	"  -b, --backend B     allocator to run CMD on (default: glibc)\n"
	"  -s, --summary FILE  write the JSON summary to FILE\n"
	"  -o, --out TRACE     record every event to TRACE ('%p': the pid);\n"
	"                      see memtrace dump, memtrace stat TRACE\n"
	"  -f, --force         overwrite TRACE if it exists\n"
	"  -z, --compress      compress the trace's chunks (zstd)\n"
	"  -q, --quiet         no summary on stderr\n"
	"  -L, --lttng         record LTTng-UST events (memtrace:*) in a session\n"
	"                      of their own, written to DIR (-o); needs\n"
	"                      lttng-tools; read it with babeltrace2 DIR\n"
	"  -h, --help          this text\n";

/* Can the shim create the trace?  Asked before the command runs: the
 * shim says it cannot only once the command is running, and records
 * nothing while it runs to its end (new-user trial 31).  A name with %p
 * (each process its own file) is asked of its directory. */
static bool trace_writable(const char *path, bool force)
{
	if (strstr(path, "%p")) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		if (access(slash ? dir : ".", W_OK) == 0)
			return true;
		fprintf(stderr, "memtrace: run: cannot create the trace %s: %s: %m "
				"(choose a writable directory for -o)\n",
			path, slash ? dir : ".");
		return false;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		unlink(path);
		return true;
	}
	if (errno == EEXIST && force)
		return true;
	if (errno == EEXIST)
		fprintf(stderr, "memtrace: run: %s exists: memtrace never overwrites "
				"a file (remove it, choose another name, or --force)\n",
			path);
	else
		fprintf(stderr, "memtrace: run: cannot create the trace %s: %m "
				"(choose a writable path for -o)\n",
			path);
	return false;
}

int mt_cmd_run(int argc, char **argv)
{
	static const struct option options[] = {
		{"backend", required_argument, NULL, 'b'},
		{"summary", required_argument, NULL, 's'},
		{"quiet", no_argument, NULL, 'q'},
		{"out", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"compress", no_argument, NULL, 'z'},
		{"lttng", no_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct mt_launch l = {MT_LAUNCH_DEFAULTS};
	bool lttng = false;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+b:s:qo:fzLh", options, NULL)) != -1) {
		switch (opt) {
		case 'b':
			l.backend = optarg;
			break;
		case 's':
			if (!*optarg)
				return mt_usage_error(usage, "run: --summary needs a file name");
			l.summary = optarg;
			break;
		case 'q':
			l.quiet = true;
			break;
		case 'o':
			if (!*optarg)
				return mt_usage_error(usage, "run: --out needs a file name");
			l.trace = optarg;
			break;
		case 'f':
			l.force = true;
			break;
		case 'z':
			l.compress = true;
			break;
		case 'L':
			lttng = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return mt_usage_error(usage, "run: unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return mt_usage_error(usage, "run: no command given");
	if (lttng && (l.force || l.compress))
		return mt_usage_error(usage, "run: --force and --compress are for "
					     "memtrace's own trace, not --lttng");
	if (!mt_launch_check(&l))
		return MT_EXIT_USAGE;
	if (!lttng && l.trace && !trace_writable(l.trace, l.force))
		return MT_EXIT_USAGE;
	if (lttng) {
		/* -o names LTTng's output directory. */
		const char *dir = l.trace;
		l.trace = NULL;
		return mt_lttng_run(&l, dir, argv + optind);
	}
	mt_launch_exec(&l, argv + optind);
	return 127;
}
