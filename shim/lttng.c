#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "lttng.h"
#include "options.h"
#include "thread.h"

const struct mt_lttng_sink *mt_lttng;

#define PROVIDER "libmemtrace-lttng.so"

/* The provider is installed (and built) next to the shim. */
static bool provider_path(char *out, size_t size)
{
	Dl_info info;
	if (!dladdr((void *)mt_lttng_start, &info) || !info.dli_fname)
		return false;
	const char *slash = strrchr(info.dli_fname, '/');
	int dir = slash ? (int)(slash - info.dli_fname + 1) : 0;
	int n = snprintf(out, size, "%.*s%s", dir, info.dli_fname, PROVIDER);
	return n > 0 && (size_t)n < size;
}

/* lttng-ust's locks are taken across fork (it would otherwise hold them
 * in a child with none of its threads); what it does meanwhile is the
 * shim's work, not the program's, and is not sent back to it (trace.c's
 * TO_LTTNG). */
#define INSIDE_LTTNG(call)                                                   \
	do {                                                                 \
		mt_tls.hidden++;                                             \
		mt_tls.in_lttng = true;                                      \
		call;                                                        \
		mt_tls.in_lttng = false;                                     \
		mt_tls.hidden--;                                             \
	} while (0)

static void fork_prepare(void)
{
	INSIDE_LTTNG(mt_lttng->fork_prepare());
}

static void fork_parent(void)
{
	INSIDE_LTTNG(mt_lttng->fork_parent());
}

bool mt_lttng_start(void)
{
	char path[PATH_MAX];

	if (!mt_opt.lttng)
		return false;
	if (!provider_path(path, sizeof path)) {
		mt_warn("MEMTRACE_LTTNG: cannot locate the shim's directory; "
			"no LTTng events");
		return false;
	}
	/* lttng-ust starts its threads and registers with the session
	 * daemon from the provider's constructors, here. */
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		mt_warn("MEMTRACE_LTTNG: cannot load %s (%s); install lttng-ust "
			"(Debian: liblttng-ust1) and build memtrace with "
			"liblttng-ust-dev; no LTTng events",
			path, dlerror());
		return false;
	}
	const struct mt_lttng_sink *sink = dlsym(lib, MT_LTTNG_SINK_SYMBOL);
	if (!sink || sink->version != MT_LTTNG_SINK_VERSION) {
		mt_warn("MEMTRACE_LTTNG: %s is not this memtrace's provider "
			"(rebuild and install both together); no LTTng events",
			path);
		return false;
	}
	mt_lttng = sink;
	pthread_atfork(fork_prepare, fork_parent, NULL);
	return true;
}

void mt_lttng_after_fork_child(void)
{
	if (mt_lttng)
		INSIDE_LTTNG(mt_lttng->fork_child());
}
