/* The command a verb is asked to run: where it is, and whether the shim
 * can get into it at all (a statically linked program has no dynamic
 * loader, so LD_PRELOAD never loads libmemtrace.so). */
#ifndef MEMTRACE_COMMAND_H
#define MEMTRACE_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

/* The file `name` runs, as execvp finds it (a name with a slash as is,
 * else the first executable file of that name on PATH), into path.
 * False when there is none. */
bool mt_find_command(const char *name, char *path, size_t len);

/* Is path an ELF executable without a program interpreter (statically
 * linked, static-pie included)? */
bool mt_is_static(const char *path);

/* Before running argv[0] several times (compare, explain): false, with
 * one message for the verb, when it cannot be found or is static; *status
 * is then the exit status to give (127: not found, 2: cannot be
 * measured). */
bool mt_command_check(const char *verb, const char *name, int *status);

/* "exit status 3", or "killed by signal 9 (SIGKILL)" for a status in
 * the shell's convention (128 + signal) that came from a signal. */
const char *mt_status_text(int status, bool signaled, char *buf, size_t len);

#endif
