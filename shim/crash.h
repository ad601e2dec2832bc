/* Fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) while a trace
 * is recorded: what the buffers hold is written out before the process
 * dies, so the trace of a crash ends at the crash.  Signals that end a
 * process whole by default (SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGALRM,
 * SIGUSR1, SIGUSR2), traced or not: its summary and closing record are
 * written as exit writes them, then it dies of the signal.
 *
 * The handler is installed only where the program leaves the default, and
 * the program never sees it: sigaction() and signal() report the default
 * in its place.  A program that installs a handler of its own replaces
 * it, as it would replace the default; if that handler then restores the
 * default and raises the signal again, the last ~100 ms of events are
 * lost, as without this. */
#ifndef MEMTRACE_CRASH_H
#define MEMTRACE_CRASH_H

#include <signal.h>
#include <stdbool.h>

/* on_ending_signal: called in the handler of a signal that ends the
 * process whole, before it dies of it; false: not now (the process dies
 * of it later, mt_crash_die_of). */
void mt_crash_start(bool tracing, bool (*on_ending_signal)(int));
/* The process dies of sig as it would have without the shim (its default
 * action, raised again). */
void mt_crash_die_of(int sig);
/* The program sets sig's default (act): the shim's handler in its place
 * (*ours, the program's mask kept) where the shim would have put it at
 * start-up.  Python resets SIGINT to the default and raises it again when
 * a KeyboardInterrupt ends it: without this its summary was lost. */
bool mt_crash_in_place_of_default(int sig, const struct sigaction *act,
				  struct sigaction *ours);
/* What sigaction reported: the default in place of the shim's handler. */
void mt_crash_hide(struct sigaction *old);
/* Is h (as signal() returns it) the shim's handler? */
bool mt_crash_handler_is(__sighandler_t h);

#endif
