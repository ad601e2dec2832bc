/* The shim's life in the host process: start-up, threads' ends, fork,
 * exec and exit.  Each step is said here once, in order, for every part
 * (counters, sinks, kernel samples, the summary); the parts do not call
 * one another for it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "block_sizes.h"
#include "crash.h"
#include "diag.h"
#include "glibc_heap.h"
#include "emit.h"
#include "ksamples.h"
#include "lifecycle.h"
#include "loader_blocks.h"
#include "lttng.h"
#include "mode.h"
#include "options.h"
#include "own_stack.h"
#include "regions.h"
#include "report.h"
#include "rss.h"
#include "sites.h"
#include "stack_room.h"
#include "size_classes.h"
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

/* The counters as they stood when recording began: what happened before
 * (start-up, or the parent's part) is in them, so that the figures
 * replayed from the events equal the live ones. */
static void emit_baseline(struct mt_thread *t)
{
	uint64_t v[sizeof t->c / sizeof(uint64_t) + 1];
	size_t n = sizeof v / sizeof *v;
	memcpy(v, &t->c, sizeof t->c);
	v[n - 1] = mt_peak_live();
	MT_EMIT(baseline, t, v, n);
}

/* The sinks asked for, on: LTTng first (its first event is the process's
 * facts), then the native trace. */
static void start_sinks(void)
{
	if (mt_lttng_start())
		mt_lttng_announce(0);
	if (mt_trace_start())
		mt_sink_on(MT_SINK_TRACE, &mt_trace_sink);
	if (mt_tracing)
		emit_baseline(mt_self());
}

/* A thread ends: the kernel's samples still buffered go in with its
 * events, then its events are written out. */
static void thread_exit(struct mt_thread *t)
{
	mt_rss_thread_exit(t);
	if (!mt_tracing)
		return;
	mt_ksamples_drain(t);
	MT_EMIT(thread_exit, t);
}

/* Fork, in three steps: before it, in the parent after it, in the child
 * (which counts on its own, from zero).  None once a seccomp filter made
 * memtrace stop (mt_lifecycle_sandbox): the child's step makes system
 * calls (getpid, perf_event_open), for which the filter it inherits kills
 * it. */
static void before_fork(void)
{
	if (active)
		mt_lttng_fork_prepare();
}

static void parent_after_fork(void)
{
	if (!active)
		return;
	mt_report_forked();
	mt_lttng_fork_parent();
}

/* This process, when a fork made it (its child handler ran here); not a
 * vfork child, which runs no handler and shares its parent's memory. */
static pid_t forked_child;
/* The process mt_init ran in. */
static pid_t started;

/* The CPU time and page faults of the calling thread since *cpu0 and *ru0,
 * as the shim's start-up (its constructor, a child's handler). */
static void startup_took(const struct timespec *cpu0, const struct rusage *ru0)
{
	struct timespec cpu1;
	struct rusage ru1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
	getrusage(RUSAGE_THREAD, &ru1);
	mt_report_startup_took((double)(cpu1.tv_sec - cpu0->tv_sec) +
				       (double)(cpu1.tv_nsec - cpu0->tv_nsec) / 1e9,
			       (uint64_t)(ru1.ru_minflt - ru0->ru_minflt +
					  ru1.ru_majflt - ru0->ru_majflt));
}

/* (its start-up cost the child's: some 50 page faults in a child that
 * takes 18 bare, which its figures counted as the program's; new-user
 * trial 51) */
static void child_after_fork(void)
{
	if (!active)
		return;
	struct timespec cpu0;
	struct rusage ru0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
	getrusage(RUSAGE_THREAD, &ru0);
	mt_tls.hidden++;
	forked_child = getpid();
	mt_loader_blocks_after_fork();
	mt_shim_threads_forget();
	mt_threads_reset_after_fork();
	mt_sites_reset_after_fork();
	mt_small_sites_reset_after_fork();
	mt_glibc_heaps_deleted_reset();
	mt_lttng_fork_child();
	mt_regions_reset_after_fork();
	mt_report_restart_in_child();
	mt_ksamples_forget();
	pid_t parent = getppid();
	mt_lttng_announce(parent);
	if (mt_sinks[MT_SINK_TRACE] && !mt_trace_restart_in_child(parent))
		mt_sink_off(MT_SINK_TRACE);
	struct mt_thread *self = mt_tls.thread;
	if (mt_tracing && self) {
		emit_baseline(self);
		MT_EMIT(forked, self, parent);
	}
	if (mt_tracing && mt_opt.perf)
		mt_ksamples_start(mt_opt.fault_period);
	mt_rss_restart_in_child();
	startup_took(&cpu0, &ru0);
	mt_tls.hidden--;
}

/* Runs before main (after libc's constructors).  Allocation may already
 * have happened; the wrappers resolve symbols on their own first call.
 * glibc calls constructors with main's arguments. */
__attribute__((constructor)) static void mt_init(int argc, char **argv,
						 char **envp)
{
	(void)argc;
	(void)envp;
	struct timespec cpu0;
	struct rusage ru0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
	getrusage(RUSAGE_THREAD, &ru0);
	/* The shim's own allocations (getenv, dlsym, snprintf) are not the
	 * program's. */
	mt_tls.hidden++;
	mt_diag_start();
	mt_symbols_resolve();
	/* From here the shim's own blocks come from its arena, not from the
	 * allocator it measures: a lookup that fails (tc_nallocx on mimalloc,
	 * Py_Version in a C program) leaves dlerror's message allocated, and
	 * one small block live in mimalloc's heap kept a segment that every
	 * 256 KiB-8 MiB request then reused, where bare each made a segment
	 * anew: 0.37 s of CPU under the shim against 0.49 s bare (new-user
	 * trial 47). */
	mt_symbols_own_heap(true);
	/* (another allocator than glibc's: its size classes and the map of
	 * pages, block_sizes.h) */
	if (!mt_glibc_chunks && mt_size_classes_probe()) {
		mt_block_sizes_start();
		mt_fast_update();
		mt_loader_blocks_kept = mt_size_classes_of_jemalloc;
	}
	active = getauxval(AT_SECURE) == 0;
	if (active) {
		mt_options_parse(&mt_opt, get_env);
		active = mt_backend_ensure(argv);
	}
	if (active) {
		mt_stack_room_init();
		mt_threads_init(thread_exit, mt_real.pthread_create);
		if (mt_opt.sites)
			mt_sites_init();
		if (mt_sites_on)
			mt_small_sites_start(mt_opt.small_sample_bytes,
					     mt_opt.small_sample_fixed);
		/* Why kernel counters are missing is news, not an error:
		 * MEMTRACE_QUIET keeps it to the summary's "sources". */
		mt_report_start(!mt_opt.quiet);
		start_sinks();
		started = getpid();
		mt_own_stack_start();
		mt_crash_start(mt_sinks[MT_SINK_TRACE], mt_lifecycle_killed);
		start_kernel_samples();
		mt_rss_start();
		pthread_atfork(before_fork, parent_after_fork, child_after_fork);
		startup_took(&cpu0, &ru0);
	}
	mt_symbols_own_heap(false);
	mt_tls.hidden--;
}

/* exit(): the closing record to every sink, which ends its recording. */
static void finish(const struct mt_closing *record)
{
	MT_EMIT(finish, record);
}

/* 1 while the summary is being written, 2 once it is: a signal that ends
 * the process meanwhile (its handler, mt_lifecycle_killed) does not start
 * it again over the one it interrupted. */
static int finishing;

/* An ending signal that came while the summary was being written: the
 * process dies of it once the summary is out. */
static int pending_signal;

static void write_summary(void *unused)
{
	(void)unused;
	mt_rss_at_exit(mt_self());
	mt_report_at_exit(finish);
}

/* The summary takes some tens of KiB of stack: an exit from a signal
 * handler on its alternate stack (SIGSTKSZ) has less. */
#define SUMMARY_STACK_BYTES (64u << 10)

__attribute__((destructor)) static void mt_fini(void)
{
	if (!active)
		return;
	__atomic_store_n(&finishing, 1, __ATOMIC_RELAXED);
	mt_tls.hidden++;
	if (mt_stack_room(SUMMARY_STACK_BYTES) == MT_STACK_ROOM ||
	    !mt_own_stack_run(write_summary, NULL))
		write_summary(NULL);
	mt_tls.hidden--;
	/* (done: a signal from here on ends the process at once) */
	__atomic_store_n(&finishing, 2, __ATOMIC_RELAXED);
	int sig = __atomic_load_n(&pending_signal, __ATOMIC_RELAXED);
	if (sig)
		mt_crash_die_of(sig);
}

static bool sandboxed;

bool mt_lifecycle_sandboxed(void)
{
	return __atomic_load_n(&sandboxed, __ATOMIC_RELAXED);
}

void mt_lifecycle_sandbox(void)
{
	if (!active)
		return;
	__atomic_store_n(&sandboxed, true, __ATOMIC_RELAXED);
	mt_sites_sandboxed();
	mt_tls.hidden++;
	mt_warn("the program installs a seccomp filter, which may kill it for "
		"a system call of memtrace's own: what was recorded so far is "
		"written now, and memtrace makes no system call from here on "
		"(the figures end here)");
	/* Their calls too: a filter may be put on every thread at once. */
	mt_shim_threads_pause();
	mt_rss_at_exit(mt_self());
	mt_report_at_exit(finish);
	active = false; /* (exit has nothing more to write) */
	mt_tls.hidden--;
}

void mt_lifecycle_exec(const char *path)
{
	MT_EMIT(exec, path);
}

void mt_lifecycle_exec_failed(void)
{
	MT_EMIT(exec_failed);
}

bool mt_lifecycle_killed(int sig)
{
	/* (not in a vfork child, whose memory is its parent's; nothing
	 * once stopped, getpid itself is a system call a filter may kill
	 * for) */
	if (!active)
		return true;
	pid_t pid = getpid();
	if (pid != started && pid != forked_child)
		return true;
	/* An exit writing the summary (this thread's, interrupted, or
	 * another's): dying now would cut it short, and a pool's worker
	 * that left by os._exit as the pool's SIGTERM came had none (1
	 * explain in 3: new-user trial 9).  The exit dies of the signal
	 * when the summary is out; a second one ends it at once. */
	int state = __atomic_load_n(&finishing, __ATOMIC_RELAXED);
	if (state == 2)
		return true;
	if (state == 1) {
		int none = 0;
		return !__atomic_compare_exchange_n(&pending_signal, &none, sig,
						    false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
	}
	mt_trace_ended_by(sig);
	mt_fini();
	active = false;
	return true;
}

void mt_lifecycle_exit_status(int status)
{
	if (active)
		mt_trace_exit_status(status & 0377); /* (what the parent sees) */
}

void mt_lifecycle_exit_now(int status)
{
	/* A process leaving by _exit, as a server's workers, a pool's
	 * processes (Python's os._exit) and a shell's children do, or a
	 * program that ends itself so from a thread: its summary all the
	 * same, as exit writes it, or its figures are lost to explain and
	 * stat ("no run succeeded" for os._exit(7) from a thread: new-user
	 * trial 16).  Not in a vfork child, whose memory is its parent's
	 * (its pid is neither). */
	if (!active)
		return; /* (stopped: no system call, getpid's neither) */
	pid_t pid = getpid();
	if (pid == started || (forked_child && forked_child == pid)) {
		mt_trace_ended_by_exit_now(status);
		mt_fini();
		active = false;
		return;
	}
	MT_EMIT(exit_now, status);
}
