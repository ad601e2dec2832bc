/* Start-up, fork and exit: the shim's life cycle in the host process. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "backend.h"
#include "crash.h"
#include "diag.h"
#include "ksamples.h"
#include "loader_blocks.h"
#include "lttng.h"
#include "options.h"
#include "regions.h"
#include "sites.h"
#include "report.h"
#include "symbols.h"
#include "thread.h"
#include "trace.h"

static bool active; /* false in setuid programs: count, but tell no one */

static const char *get_env(const char *name)
{
	return getenv(name);
}

/* With a trace, the kernel's view too: every memory syscall with its
 * arguments and result, and sampled page faults when asked for. */
static void start_kernel_samples(void)
{
	if (mt_opt.fault_period && !mt_tracing)
		mt_warn("MEMTRACE_FAULTS records samples into the trace: set "
			"MEMTRACE_OUT too (or memtrace run -o FILE)");
	if (mt_tracing && mt_opt.perf)
		mt_ksamples_start(mt_opt.fault_period);
}

/* The child of a fork counts on its own, from zero. */
static void child_after_fork(void)
{
	mt_tls.hidden++;
	mt_loader_blocks_after_fork();
	mt_shim_threads_forget();
	mt_threads_reset_after_fork();
	mt_sites_reset_after_fork();
	mt_lttng_after_fork_child();
	mt_regions_reset_after_fork();
	mt_report_restart_in_child();
	mt_ksamples_forget();
	mt_trace_restart_in_child(getppid());
	if (mt_tracing && mt_opt.perf)
		mt_ksamples_start(mt_opt.fault_period);
	mt_tls.hidden--;
}

/* Runs before main (after libc's constructors).  Allocation may already
 * have happened; the wrappers resolve symbols on their own first call. */
__attribute__((constructor)) static void mt_init(void)
{
	/* The shim's own allocations (getenv, dlsym, snprintf) are not the
	 * program's. */
	mt_tls.hidden++;
	mt_symbols_resolve();
	active = getauxval(AT_SECURE) == 0;
	if (active) {
		mt_options_parse(&mt_opt, get_env);
		mt_backend_ensure();
		mt_threads_init();
		if (mt_opt.sites)
			mt_sites_init();
		/* Why kernel counters are missing is news, not an error:
		 * MEMTRACE_QUIET keeps it to the summary's "sources". */
		mt_report_start(!mt_opt.quiet);
		mt_trace_start();
		if (mt_tracing && mt_opt.trace_path)
			mt_crash_start();
		start_kernel_samples();
		pthread_atfork(NULL, NULL, child_after_fork);
	}
	mt_tls.hidden--;
}

__attribute__((destructor)) static void mt_fini(void)
{
	if (!active)
		return;
	mt_tls.hidden++;
	mt_report_at_exit();
	mt_tls.hidden--;
}
