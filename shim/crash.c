#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "crash.h"
#include "own_stack.h"
#include "rawsys.h"
#include "symbols.h"
#include "emit.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
/* Signals whose default ends the process without a fault: a pool's
 * SIGTERM to its workers, Ctrl-C, a closed pipe, an alarm. */
static const int ending_signals[] = {SIGHUP,  SIGINT,  SIGPIPE, SIGALRM,
				     SIGTERM, SIGUSR1, SIGUSR2};

/* Blocked while it runs, the signal raised again is taken as it returns,
 * with the default action: the process dies of it as it would have (the
 * same status, a core where one was due).  A fault raises it again by
 * itself when its instruction runs again.  Raw system calls, with the
 * kernel's struct (SIG_DFL, no flags, no mask: all zero): the thread the
 * signal came to may have a few hundred bytes of stack left, where glibc's
 * sigaction and raise take a kilobyte (a thread of PTHREAD_STACK_MIN 8 KiB
 * deep, whose signal frame of AVX-512 state took 3 KiB more: SIGSEGV,
 * where bare it died of SIGTERM). */
void mt_crash_die_of(int sig)
{
	unsigned long dfl[4] = {0};
	mt_raw(-1, SYS_rt_sigaction, sig, (long)dfl, 0, 8, 0, 0);
	mt_raw(-1, SYS_tgkill, mt_raw(-1, SYS_getpid, 0, 0, 0, 0, 0, 0),
	       mt_raw(-1, SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
}

static void on_fatal(int sig, siginfo_t *info, void *context)
{
	(void)info;
	(void)context;
	int saved = errno;
	MT_EMIT(crash, sig);
	mt_crash_die_of(sig);
	errno = saved;
}

/* Not a crash: the process is whole, and its summary and closing record
 * are written as exit writes them (the caller's `ending`, lifecycle.c),
 * so that a worker a pool terminates keeps its figures. */
static bool (*ending)(int);

/* The summary and closing record are written on the shim's own stack
 * (own_stack.h): the thread the signal came to may have little left of
 * its own. */
struct ending_call {
	int sig;
	bool now;
};

static void end_on_own_stack(void *arg)
{
	struct ending_call *c = arg;
	c->now = ending(c->sig);
}

static bool end(int sig)
{
	struct ending_call c = {sig, false};
	if (!mt_own_stack_run(end_on_own_stack, &c))
		c.now = ending(sig);
	return c.now;
}

static void on_ending(int sig, siginfo_t *info, void *context)
{
	(void)info;
	(void)context;
	int saved = errno;
	/* (false: an exit is writing the summary, and dies of sig after) */
	if (end(sig))
		mt_crash_die_of(sig);
	errno = saved;
}

static void install(const int *signals, size_t n,
		    void (*handler)(int, siginfo_t *, void *))
{
	for (size_t i = 0; i < n; i++) {
		struct sigaction old, ours;
		if (mt_real.sigaction(signals[i], NULL, &old) != 0 ||
		    old.sa_handler != SIG_DFL || old.sa_flags & SA_SIGINFO)
			continue;
		memset(&ours, 0, sizeof ours);
		ours.sa_sigaction = handler;
		/* On the thread's alternate stack when it has one: a stack
		 * overflow can still be written out. */
		ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
		mt_real.sigaction(signals[i], &ours, NULL);
	}
}

static bool fatal_on, ending_on;

void mt_crash_start(bool tracing, bool (*on_ending_signal)(int))
{
	fatal_on = tracing;
	ending = on_ending_signal;
	ending_on = true;
	if (tracing)
		install(fatal_signals, sizeof fatal_signals / sizeof *fatal_signals,
			on_fatal);
	install(ending_signals, sizeof ending_signals / sizeof *ending_signals,
		on_ending);
}

static bool among(int sig, const int *signals, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (signals[i] == sig)
			return true;
	return false;
}

bool mt_crash_in_place_of_default(int sig, const struct sigaction *act,
				  struct sigaction *ours)
{
	if (!act || act->sa_flags & SA_SIGINFO || act->sa_handler != SIG_DFL)
		return false;
	void (*handler)(int, siginfo_t *, void *) =
		fatal_on && among(sig, fatal_signals, sizeof fatal_signals /
							  sizeof *fatal_signals)
			? on_fatal
		: ending_on && among(sig, ending_signals, sizeof ending_signals /
							      sizeof *ending_signals)
			? on_ending
			: NULL;
	if (!handler)
		return false;
	*ours = *act;
	ours->sa_sigaction = handler;
	ours->sa_flags = (act->sa_flags & ~SA_RESETHAND) | SA_SIGINFO | SA_ONSTACK;
	return true;
}

bool mt_crash_handler_is(__sighandler_t h)
{
	return (void *)h == (void *)on_fatal || (void *)h == (void *)on_ending;
}

void mt_crash_hide(struct sigaction *old)
{
	if (old->sa_flags & SA_SIGINFO &&
	    (old->sa_sigaction == on_fatal || old->sa_sigaction == on_ending)) {
		memset(old, 0, sizeof *old);
		old->sa_handler = SIG_DFL;
	}
}
