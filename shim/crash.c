#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "crash.h"
#include "symbols.h"
#include "emit.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

/* Blocked while it runs, the signal raised again is taken as it returns,
 * with the default action: the process dies of it as it would have (the
 * same status, a core where one was due).  A fault raises it again by
 * itself when its instruction runs again. */
static void on_fatal(int sig, siginfo_t *info, void *context)
{
	(void)info;
	(void)context;
	int saved = errno;
	MT_EMIT(crash, sig);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	mt_real.sigaction(sig, &dfl, NULL);
	raise(sig);
	errno = saved;
}

void mt_crash_start(void)
{
	for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
		struct sigaction old, ours;
		if (mt_real.sigaction(fatal_signals[i], NULL, &old) != 0 ||
		    old.sa_handler != SIG_DFL || old.sa_flags & SA_SIGINFO)
			continue;
		memset(&ours, 0, sizeof ours);
		ours.sa_sigaction = on_fatal;
		/* On the thread's alternate stack when it has one: a stack
		 * overflow can still be written out. */
		ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
		mt_real.sigaction(fatal_signals[i], &ours, NULL);
	}
}

bool mt_crash_handler_is(__sighandler_t h)
{
	return (void *)h == (void *)on_fatal;
}

void mt_crash_hide(struct sigaction *old)
{
	if (old->sa_flags & SA_SIGINFO && old->sa_sigaction == on_fatal) {
		memset(old, 0, sizeof *old);
		old->sa_handler = SIG_DFL;
	}
}
