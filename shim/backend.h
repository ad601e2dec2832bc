/* Which allocator serves malloc in this process, and making it the one the
 * user asked for. */
#ifndef MEMTRACE_BACKEND_H
#define MEMTRACE_BACKEND_H
#include <stdbool.h>

#include "visibility.h"

struct mt_backend_id {
	const char *name;    /* "glibc", "jemalloc", ... or "custom" */
	const char *library; /* path of the object that defines malloc */
	char version[64];    /* "" when the library does not say */
};

extern MT_HIDDEN struct mt_backend_id mt_backend_id;

/* Make the allocator named by mt_opt.backend serve malloc, re-executing
 * the program once with a corrected LD_PRELOAD when it does not; fatal
 * when it cannot be.  Fills mt_backend_id.  argv: the program's, as glibc
 * gives it to constructors (for a restart where /proc is missing).
 * false, said, when the program's malloc calls cannot reach the shim (an
 * allocator preloaded before it, where none was asked for). */
bool mt_backend_ensure(char **argv);

#endif
