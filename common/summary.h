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
	/* Kernel counters, since the shim started, less the shim's own calls;
	 * valid[] false where they were not available. */
	bool kernel_valid[MT_KERNEL_COUNT];
	uint64_t kernel[MT_KERNEL_COUNT];
	uint64_t rusage_minor_faults, rusage_major_faults;
	bool glibc_inference; /* glibc's hidden heap calls were inferred */
	double user_s, system_s, wall_s;
	uint64_t shim_syscalls[MT_SYS_COUNT];
};

/* A figure with where it came from, and whether it covers every call. */
struct mt_figure {
	uint64_t value;
	const char *source; /* "kernel", "interposed", "interposed+inferred",
			       "getrusage" */
	bool complete;
};

/* The best figure for a memory syscall, and for page faults. */
struct mt_figure mt_summary_syscall(const struct mt_summary *s, int sys);
struct mt_figure mt_summary_faults(const struct mt_summary *s, bool major);

/* Write s as JSON into buf (NUL-terminated, no allocation).  Returns the
 * length, or 0 when buf was too small. */
size_t mt_summary_json(const struct mt_summary *s, char *buf, size_t len);

#endif
