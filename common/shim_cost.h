/* What the shim costs the program it runs in, estimated: the calls it
 * interposed, each at the cost measured for this allocator and mode
 * (the table in shim_cost.c), plus the CPU time of its own threads and of
 * its start-up, plus the threads the program started at what a start
 * costs more under the shim, plus its regions at what one costs.  The shim fills it at exit; the summary and its readers
 * say it beside the program's time. */
#ifndef MEMTRACE_SHIM_COST_H
#define MEMTRACE_SHIM_COST_H

#include <stdbool.h>
#include <stdint.h>


struct mt_shim_cost {
	bool known;	   /* false: not recorded (a trace without its end) */
	bool tracing;	   /* events recorded (trace, LTTng), not only counted */
	double calls_s;	   /* interposed calls x measured ns per call */
	double threads_s;  /* CPU time of the shim's own threads */
	double start_s;	   /* the shim's start-up (its constructor) */
	/* threads the program started x what a start costs more: the
	 * kernel counters, inherited by each new thread (perf copies every
	 * counter into it, and folds its counts back when it ends) */
	double thread_starts_s;
	/* the program's regions (memtrace_region_begin and _end) x what one
	 * costs: the kernel counters and CPU clocks read at each mark */
	double regions_s;
	double estimated_s; /* the five together */
	/* page faults of its start-up and of its threads that ended (at
	 * least: its tables touched in the program's own calls are not
	 * told apart), part of the process's */
	uint64_t faults;
	double share;	    /* estimated_s of the program's time */
};

/* Measured ns the shim adds per call, one row per allocator and mode. */
struct mt_shim_cost_row {
	const char *backend;
	bool tracing;
	double small_ns;   /* a malloc-API call on a block below 128 KiB */
	double large_ns;   /* one on a large block (MT_LARGE_BYTES or more) */
	double syscall_ns; /* a memory system call the shim interposes (the
			      program's own, another allocator's), which
			      the kernel counts too, and with a trace
			      samples */
	double kernel_ns;  /* one it does not interpose (glibc's own inside
			      malloc and free), which only the kernel
			      counters count, or sample */
	double thread_ns;  /* a thread started and ended, with the kernel
			      counters on */
	double region_ns;  /* a region begun and ended, with the kernel
			      counters on */
	double region_alone_ns; /* the same, without them */
};

/* The row for backend and mode: another backend's ("custom") is the
 * costliest row of the mode. */
const struct mt_shim_cost_row *mt_shim_cost_row(const char *backend,
						bool tracing);

/* Seconds the shim adds to so many calls: malloc-API calls (`large` of
 * them on large blocks), memory system calls it interposed, and those
 * only the kernel counters saw. */
double mt_shim_cost_of(const struct mt_shim_cost_row *r, double heap_calls,
		       double large_calls, double syscalls,
		       double kernel_syscalls);

/* Fill in k's estimated_s and share: of the program's CPU time (user +
 * system, which includes the shim's) when there is any, else of its wall
 * time. */
void mt_shim_cost_finish(struct mt_shim_cost *k, double cpu_s, double wall_s);

/* Above this share, compare marks the backend: the shim may have moved
 * its figures. */
#define MT_SHIM_COST_MARK 0.02
/* ... and at least this much time (s): a process that only forks took 3
 * ms of CPU, 29% of it the shim's start-up, and was said "may have moved
 * the figures" though it has none worth a finding (new-user trial 17). */
#define MT_SHIM_COST_MIN_S 0.005

static inline bool mt_shim_cost_moved(double share, double shim_s)
{
	return share > MT_SHIM_COST_MARK && shim_s >= MT_SHIM_COST_MIN_S;
}

/* The same from the shim's cost measured: `measured_s`, a backend's
 * fastest run under the shim less its fastest without it, `spread_s`, how
 * far either side's median run is from its fastest, `runs` under the shim
 * and `bare_cpu_s`, the fastest run without it.  Marked past twice the
 * spread, with three runs at least (two make a spread of one difference:
 * 0.039 s "past a spread of three runs", the next explain 0.000), and past
 * the estimate's share and time.  The estimate misses what blocks cold in
 * the cache cost the shim (a producer passing blocks to a consumer on
 * tcmalloc: estimated 0.038 s, measured 0.1-0.7 s of 1.6 s; new-user
 * trial 46). */
static inline bool mt_shim_cost_measured_moved(double measured_s,
					       double spread_s, unsigned runs,
					       double bare_cpu_s)
{
	return runs >= 3 && spread_s >= 0 && measured_s > 2 * spread_s &&
	       bare_cpu_s > 0 && mt_shim_cost_moved(measured_s / bare_cpu_s, measured_s);
}

#endif
