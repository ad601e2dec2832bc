/* The allocators memtrace knows by name: where Debian installs them and
 * which package provides them.  Shared by the shim and the CLI. */
#ifndef MEMTRACE_BACKENDS_H
#define MEMTRACE_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>

struct mt_backend {
	const char *name;    /* "jemalloc" */
	const char *soname;  /* "libjemalloc.so.2"; NULL for glibc (built in) */
	const char *package; /* Debian package that installs it */
	const char *prefix;  /* file-name prefix that identifies the object */
};

extern const struct mt_backend mt_backends[];
extern const size_t mt_backend_count;

/* NULL when `name` is not one of the known names. */
const struct mt_backend *mt_backend_by_name(const char *name);
/* Which known backend an object path is, NULL when none. */
const struct mt_backend *mt_backend_by_object(const char *path);
/* "glibc, jemalloc, tcmalloc, mimalloc" */
const char *mt_backend_names(void);
/* A value of MEMTRACE_BACKEND / --backend that names a library file. */
static inline bool mt_backend_is_path(const char *value)
{
	for (; *value; value++)
		if (*value == '/')
			return true;
	return false;
}
/* Full path of the installed library into buf, or NULL when it is not
 * installed.  Allocates nothing. */
const char *mt_backend_locate(const struct mt_backend *b, char *buf,
			      size_t len);

#endif
