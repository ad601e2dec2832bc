/* An exec once a seccomp filter stopped memtrace (lifecycle.h): the new
 * image inherits the filter, and memtrace starting there (its reads of
 * /proc, its kernel counters, its threads) is killed for system calls the
 * program never makes: a sandboxed program that exec'd a helper died of
 * SIGSYS where bare the helper ran.  So the image gets the environment
 * without memtrace in LD_PRELOAD (the backend stays), and runs as bare.
 * No allocation and no system call: the copy is on the caller's stack. */
#ifndef MEMTRACE_SANDBOX_ENV_H
#define MEMTRACE_SANDBOX_ENV_H

#include <stddef.h>

/* How many entries envp has (its NULL not counted). */
size_t mt_env_count(char *const envp[]);
/* envp without memtrace in LD_PRELOAD, in copy (mt_env_count + 1
 * entries) and preload (len bytes, for the new LD_PRELOAD entry); envp
 * itself where nothing is to be taken out, or where preload is too short
 * for what remains. */
char *const *mt_env_without_shim(char *const envp[], char **copy,
				 char *preload, size_t len);

#endif
