/* The memtrace verbs; each returns the process exit status. */
#ifndef MEMTRACE_CLI_H
#define MEMTRACE_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Exit status for a command-line mistake (after a usage message). */
#define MT_EXIT_USAGE 2

int mt_cmd_run(int argc, char **argv);
int mt_cmd_stat(int argc, char **argv);
int mt_cmd_compare(int argc, char **argv);
int mt_cmd_explain(int argc, char **argv);
int mt_cmd_dump(int argc, char **argv);
int mt_cmd_report(int argc, char **argv);
int mt_cmd_export(int argc, char **argv);

/* "memtrace VERB: MESSAGE\nusage..." on stderr; returns MT_EXIT_USAGE. */
int mt_usage_error(const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Files read (no -- before them) followed by an option (memtrace report
 * t.mt -o x.html): the options' place is before them, which a usage error
 * says, naming the first such option; MT_EXIT_USAGE, or 0 when there is
 * none. */
int mt_options_after_files(const char *verb, const char *usage, int argc,
			   char **argv, int first_file);

/* Which process of a recording a verb reads (--pid PID[.N]: the image
 * after N execs, as native traces name their files). */
struct mt_pick {
	long pid; /* 0: the first process */
	unsigned image;
	bool salvage; /* --salvage: damaged chunks skipped (mt_trace_salvage) */
};
/* --pid's value into pick: 0, or after a usage message naming the verb,
 * MT_EXIT_USAGE. */
int mt_parse_pick(const char *verb, const char *usage, const char *text,
		  struct mt_pick *pick);


#endif
