/* The counting-mode summary: what a process did, as figures.  The shim
 * fills one at exit; later, the trace reader fills one from a trace file.
 * Either way it is written by the same code, so the two agree. */
#ifndef MEMTRACE_SUMMARY_H
#define MEMTRACE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "resident.h"
#include "shim_cost.h"
#include "memtrace/trace_events.h"

#define MT_SUMMARY_SCHEMA 1

/* What happened over a stretch of a run (the whole process, or the calls
 * of one region). */
struct mt_figures {
	struct mt_counters c;
	/* Kernel counters, less the shim's own calls; valid[] false where
	 * they were not available. */
	bool kernel_valid[MT_KERNEL_COUNT];
	uint64_t kernel[MT_KERNEL_COUNT];
	uint64_t rusage_minor_faults, rusage_major_faults;
	double user_s, system_s;
	bool glibc_inference; /* glibc's hidden heap calls were inferred */
	uint64_t large_max_live; /* most large blocks live at once */
};

/* The calls of one region, added up. */
struct mt_region_summary {
	const char *name;
	uint64_t calls;
	double wall_total_s, wall_min_s, wall_median_s;
	struct mt_figures f;
};

struct mt_summary {
	long pid;
	const char *const *argv; /* the command, NULL-terminated */
	const char *backend_name, *backend_library, *backend_version;
	struct mt_figures f;
	uint64_t peak_live;
	bool peak_sampled; /* several threads: the peak is a lower bound */
	/* A trace the process was killed in, whose frees outnumber its
	 * allocations: each thread's events not yet written out were lost,
	 * and the peak replayed means nothing. */
	bool peak_unknown;
	unsigned threads;
	unsigned forks; /* children forked (the fork handlers ran) */
	double wall_s;
	uint64_t peak_rss_bytes;
	uint64_t shim_syscalls[MT_SYS_COUNT];
	const struct mt_region_summary *regions;
	size_t region_count;
	/* glibc's thresholds as followed by the shim (glibc backend only). */
	bool glibc_heap;
	bool thresholds_dynamic;
	bool thresholds_by_mallopt; /* the program's mallopt fixed them */
	uint64_t mmap_threshold, trim_threshold, threshold_raises;
	/* Its thread arenas' heaps deleted whole, as seen (glibc_heap.h). */
	uint64_t heaps_deleted, heaps_deleted_bytes;
	/* The call sites of large blocks (the shim's sites.c), a JSON array,
	 * or NULL. */
	const char *sites_json;
	/* Page-fault samples recorded into the trace (MEMTRACE_FAULTS). */
	unsigned fault_period; /* 0: not sampled */
	uint64_t fault_samples, fault_samples_lost;
	/* Read from a trace: the samples that fell in a large block followed
	 * to its site (the sites' "faults"); -1 when not worked out. */
	int64_t fault_samples_on_sites;
	struct mt_resident resident;
	/* What the shim cost the run, estimated (shim_cost.h). */
	struct mt_shim_cost shim_cost;
};

/* A figure with where it came from, and whether it covers every call. */
struct mt_figure {
	uint64_t value;
	const char *source; /* "kernel", "interposed", "interposed+inferred",
			       "getrusage" */
	bool complete;
};

/* The best figure for a memory syscall, and for page faults. */
struct mt_figure mt_figures_syscall(const struct mt_figures *f, int sys);
struct mt_figure mt_figures_faults(const struct mt_figures *f, bool major);

/* Seconds the shim adds to the calls of f: its malloc-API calls, and its
 * memory system calls as the best source counts them (every one the
 * kernel made when the kernel counters are on: glibc's own too). */
double mt_figures_shim_calls_s(const char *backend, bool tracing,
			       const struct mt_figures *f);

/* Write s as JSON into buf (NUL-terminated, no allocation).  Returns the
 * length, or 0 when buf was too small. */
size_t mt_summary_json(const struct mt_summary *s, char *buf, size_t len);

/* Only what a trace cannot carry in its events (kernel totals, getrusage,
 * wall time, peaks): the trace's closing record. */
size_t mt_summary_exit_json(const struct mt_summary *s, char *buf, size_t len);

#endif
