/* The shim's life in the host process (lifecycle.c): what the interposed
 * exec and _exit tell it.  Start-up, fork and exit it finds by itself (a
 * constructor, pthread_atfork, a destructor), exit's status by the wrapped
 * start of the program (start_main.c). */
#ifndef MEMTRACE_LIFECYCLE_H
#define MEMTRACE_LIFECYCLE_H

#include <stdbool.h>

/* Before exec: what this image recorded goes out; after one that failed,
 * it goes on recording. */
void mt_lifecycle_exec(const char *path);
void mt_lifecycle_exec_failed(void);
/* Before a seccomp filter is installed, whose action for a call the shim
 * makes (opening /proc files, writing the trace or the summary) may be to
 * kill the process: everything recorded goes out, and the shim makes no
 * system call of its own after it. */
void mt_lifecycle_sandbox(void);
/* Has that happened?  An exec then starts no memtrace (sandbox_env.h). */
bool mt_lifecycle_sandboxed(void);
/* _exit()/_Exit(): no atexit work, no destructor; every thread's events
 * written out first.  Safe in a signal handler and a vfork child. */
void mt_lifecycle_exit_now(int status);
/* exit() with this status (a return from main is one): run from the
 * exit handlers before the destructors (start_main.c). */
void mt_lifecycle_exit_status(int status);
/* A signal that ends the process by default is taking it (crash.h): its
 * summary and closing record, as exit writes them, saying the signal.
 * False where an exit is writing them already: it dies of the signal
 * when they are out. */
bool mt_lifecycle_killed(int sig);

#endif
