#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "launch.h"

static const char usage[] =
	"usage: memtrace run [--backend B] [--summary FILE] [--quiet] -- CMD "
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
	"  -q, --quiet         no summary on stderr\n"
	"  -h, --help          this text\n";

int mt_cmd_run(int argc, char **argv)
{
	static const struct option options[] = {
		{"backend", required_argument, NULL, 'b'},
		{"summary", required_argument, NULL, 's'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct mt_launch l = {MT_LAUNCH_DEFAULTS};
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+b:s:qh", options, NULL)) != -1) {
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
	if (!mt_launch_check(&l))
		return MT_EXIT_USAGE;
	mt_launch_exec(&l, argv + optind);
	return 127;
}
