/* The counting-mode summary: what a process did, as figures.  The shim
 * fills one at exit; later, the trace reader fills one from a trace file.
 * Either way it is written by the same code, so the two agree. */
#ifndef MEMTRACE_SUMMARY_H
#define MEMTRACE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"

#define MT_SUMMARY_SCHEMA 1

struct mt_summary {
	long pid;
	const char *const *argv; /* the command, NULL-terminated */
	const char *backend_name, *backend_library, *backend_version;
	struct mt_counters c;
	uint64_t peak_live;
	bool peak_sampled; /* several threads: the peak is a lower bound */
	unsigned threads;
	uint64_t minor_faults, major_faults;
	double user_s, system_s, wall_s;
	uint64_t shim_syscalls[MT_SYS_COUNT];
};

/* Write s as JSON into buf (NUL-terminated, no allocation).  Returns the
 * length, or 0 when buf was too small. */
size_t mt_summary_json(const struct mt_summary *s, char *buf, size_t len);

#endif
