#include <string.h>
#include <unistd.h>
#include <stdio.h>

#include "backends.h"

const struct mt_backend mt_backends[] = {
	{"glibc", NULL, "libc6", "libc.so"},
	{"jemalloc", "libjemalloc.so.2", "libjemalloc2", "libjemalloc"},
	{"tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4",
	 "libtcmalloc"},
	{"mimalloc", "libmimalloc.so.2", "libmimalloc2.0", "libmimalloc"},
};
const size_t mt_backend_count = sizeof mt_backends / sizeof mt_backends[0];

const struct mt_backend *mt_backend_by_name(const char *name)
{
	for (size_t i = 0; i < mt_backend_count; i++)
		if (strcmp(mt_backends[i].name, name) == 0)
			return &mt_backends[i];
	return NULL;
}

const struct mt_backend *mt_backend_by_object(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < mt_backend_count; i++)
		if (strncmp(base, mt_backends[i].prefix,
			    strlen(mt_backends[i].prefix)) == 0)
			return &mt_backends[i];
	return NULL;
}

const char *mt_backend_names(void)
{
	return "glibc, jemalloc, tcmalloc, mimalloc";
}

/* Where Debian and the usual prefixes keep shared libraries. */
static const char *const lib_dirs[] = {
	"/usr/lib/" MT_MULTIARCH,
	"/lib/" MT_MULTIARCH,
	"/usr/local/lib",
	"/usr/lib64",
	"/usr/lib",
};

const char *mt_backend_locate(const struct mt_backend *b, char *buf,
			      size_t len)
{
	if (!b->soname)
		return NULL;
	for (size_t i = 0; i < sizeof lib_dirs / sizeof lib_dirs[0]; i++) {
		int n = snprintf(buf, len, "%s/%s", lib_dirs[i], b->soname);
		if (n > 0 && (size_t)n < len && access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}
