#include <errno.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: memtrace VERB [OPTIONS] [-- CMD ARGS...]\n"
	"\n"
	"verbs:\n"
	"  run      run CMD under libmemtrace.so (counting mode)\n"
	"  stat     run CMD and print its allocator and memory-syscall figures\n"
	"  compare  run CMD under several allocators, figures side by side\n"
	"  explain  find what the allocator costs CMD, and why\n"
	"  dump     print a recorded trace, one event per line\n"
	"  report   a recording as one HTML page: findings and charts\n"
	"  export   a recording in another tool's format (flame graphs)\n"
	"\n"
	"'memtrace VERB --help' describes each verb.\n";

int mt_usage_error(const char *verb_usage, const char *fmt, ...)
{
	va_list ap;

	fputs("memtrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", verb_usage);
	return MT_EXIT_USAGE;
}

int mt_options_after_files(const char *verb, const char *usage, int argc,
			   char **argv, int first_file)
{
	for (int i = first_file + 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1])
			return mt_usage_error(usage, "%s: option '%s' after the file "
						     "%s: options go before the files "
						     "(memtrace %s %s ... %s)",
					      verb, argv[i], argv[first_file], verb,
					      argv[i], argv[first_file]);
	return 0;
}

static bool parse_pick(const char *text, struct mt_pick *pick)
{
	char *end;
	errno = 0;
	pick->pid = strtol(text, &end, 10);
	pick->image = 0;
	if (errno || end == text || pick->pid <= 0)
		return false;
	if (*end == '.') {
		const char *n = end + 1;
		unsigned long image = strtoul(n, &end, 10);
		if (errno || end == n || image > 1000)
			return false;
		pick->image = (unsigned)image;
	}
	return !*end;
}

int mt_parse_pick(const char *verb, const char *usage, const char *text,
		  struct mt_pick *pick)
{
	if (parse_pick(text, pick))
		return 0;
	return mt_usage_error(usage,
			      "%s: --pid needs a process id (PID or PID.N), not "
			      "'%s'",
			      verb, text);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} verbs[] = {
		{"run", mt_cmd_run},
		{"stat", mt_cmd_stat},
		{"compare", mt_cmd_compare},
		{"explain", mt_cmd_explain},
		{"dump", mt_cmd_dump},
		{"report", mt_cmd_report},
		{"export", mt_cmd_export},
	};

	if (argc < 2)
		return mt_usage_error(usage, "no verb given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		puts("memtrace " MT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (strcmp(argv[1], verbs[i].name) == 0)
			return verbs[i].run(argc - 1, argv + 1);
	return mt_usage_error(usage, "unknown verb '%s'", argv[1]);
}
