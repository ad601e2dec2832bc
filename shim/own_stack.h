/* A stack of the shim's own, for work too deep for the stack the program
 * left it: the summary and closing record written by an exit or an ending
 * signal on a thread of PTHREAD_STACK_MIN or on an alternate signal stack
 * (SIGSTKSZ, as language runtimes install), which ran past it: the
 * process died of SIGSEGV where it would have exited or died of SIGTERM. */
#ifndef MEMTRACE_OWN_STACK_H
#define MEMTRACE_OWN_STACK_H

#include <stdbool.h>

/* Mapped at start (MAP_NORESERVE: touched only when used). */
void mt_own_stack_start(void);
/* fn(arg) run on it, returning here; false, fn not run, when it is in use
 * (one thread at a time: another meanwhile runs on its own stack, as
 * before) or was not mapped. */
bool mt_own_stack_run(void (*fn)(void *), void *arg);

#endif
