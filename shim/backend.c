#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "backends.h"
#include "diag.h"
#include "options.h"
#include "rawsys.h"
#include "symbols.h"

struct mt_backend_id mt_backend_id;

/* Set in the environment of the one re-execution, so it cannot loop. */
#define REEXEC_MARK "MEMTRACE_REEXEC"

static const char *object_of(void *fn)
{
	Dl_info info;
	return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

static void read_version(const struct mt_backend *b, char *out, size_t len)
{
	out[0] = '\0';
	if (!b)
		return;
	if (strcmp(b->name, "glibc") == 0) {
		snprintf(out, len, "%s", gnu_get_libc_version());
	} else if (strcmp(b->name, "jemalloc") == 0) {
		int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
			dlsym(RTLD_DEFAULT, "mallctl");
		const char *v = NULL;
		size_t sz = sizeof v;
		if (mallctl && mallctl("version", &v, &sz, NULL, 0) == 0 && v)
			snprintf(out, len, "%.*s", (int)strcspn(v, "-"), v);
	} else if (strcmp(b->name, "tcmalloc") == 0) {
		const char *(*tc_version)(int *, int *, const char **) =
			dlsym(RTLD_DEFAULT, "tc_version");
		int major, minor;
		const char *patch;
		if (tc_version) {
			tc_version(&major, &minor, &patch);
			snprintf(out, len, "%d.%d%s", major, minor, patch);
		}
	} else if (strcmp(b->name, "mimalloc") == 0) {
		int (*mi_version)(void) = dlsym(RTLD_DEFAULT, "mi_version");
		if (mi_version) {
			int v = mi_version();
			snprintf(out, len, "%d.%d.%d", v / 100, v / 10 % 10,
				 v % 10);
		}
	}
}

static void identify(void)
{
	const char *lib = object_of((void *)mt_real.malloc);
	const struct mt_backend *b = mt_backend_by_object(lib);

	mt_backend_id.library = lib;
	mt_backend_id.name = b ? b->name : "custom";
	read_version(b, mt_backend_id.version, sizeof mt_backend_id.version);
}

/* Does the object serving malloc match what was asked for? */
static bool serves_requested(void)
{
	const char *want = mt_opt.backend;

	if (mt_backend_is_path(want)) {
		char a[4096], b[4096];
		return realpath(want, a) && realpath(mt_backend_id.library, b) &&
		       strcmp(a, b) == 0;
	}
	return strcmp(want, mt_backend_id.name) == 0;
}

/* The library file for the requested backend; fatal when not installed. */
static const char *requested_library(char *buf, size_t len)
{
	const char *want = mt_opt.backend;

	if (mt_backend_is_path(want)) {
		if (access(want, R_OK) != 0)
			mt_fatal("MEMTRACE_BACKEND=%s: no such library file "
				 "(give the path of an installed malloc library)",
				 want);
		return want;
	}
	const struct mt_backend *b = mt_backend_by_name(want);
	const char *path = mt_backend_locate(b, buf, len);
	if (!path)
		mt_fatal("backend %s is not installed: %s was not found "
			 "(install it with: apt-get install %s)",
			 b->name, b->soname, b->package);
	return path;
}

/* Read /proc/self/cmdline into buf as an argv array (no heap). */
static char **self_argv(char *buf, size_t len, char **argv, size_t max)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t n = 0, argc = 0;

	if (fd < 0)
		return NULL;
	for (ssize_t r; n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0;)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	for (size_t i = 0; i < n && argc < max - 1; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	argv[argc] = NULL;
	return argc ? argv : NULL;
}

/* LD_PRELOAD with this library first and the backend right after it, then
 * whatever else was there. */
static void build_preload(char *out, size_t len, const char *self,
			  const char *backend)
{
	const char *old = getenv("LD_PRELOAD");
	size_t n = (size_t)snprintf(out, len, "LD_PRELOAD=%s:%s", self, backend);
	char entry[4096];

	while (old && *old && n < len) {
		size_t w = strcspn(old, ": ");
		snprintf(entry, sizeof entry, "%.*s", (int)w, old);
		if (w && strcmp(entry, self) != 0 && strcmp(entry, backend) != 0 &&
		    !strstr(entry, "libmemtrace"))
			n += (size_t)snprintf(out + n, len - n, ":%s", entry);
		old += w;
		old += strspn(old, ": ");
	}
	if (n >= len)
		mt_fatal("LD_PRELOAD is too long to add the backend to");
}

static void __attribute__((noreturn)) reexec_with(const char *backend)
{
	static char cmdline[256 * 1024], preload[16384];
	static char *argv[4096], *envp[8192];
	extern char **environ;
	size_t n = 0;

	if (!self_argv(cmdline, sizeof cmdline, argv, 4096))
		mt_fatal("cannot read /proc/self/cmdline to restart the program "
			 "with backend %s; use: memtrace run --backend %s -- CMD",
			 mt_opt.backend, mt_opt.backend);
	build_preload(preload, sizeof preload, object_of((void *)reexec_with),
		      backend);
	envp[n++] = preload;
	envp[n++] = REEXEC_MARK "=1";
	for (char **e = environ; *e && n < 8191; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0 &&
		    strncmp(*e, REEXEC_MARK "=", sizeof REEXEC_MARK) != 0)
			envp[n++] = *e;
	envp[n] = NULL;
	execve("/proc/self/exe", argv, envp);
	mt_fatal("cannot restart the program with backend %s: execve failed; "
		 "use: memtrace run --backend %s -- CMD",
		 mt_opt.backend, mt_opt.backend);
}

void mt_backend_ensure(void)
{
	char buf[4096];

	identify();
	/* (With MEMTRACE_BACKEND the restart below puts the shim first.) */
	if (!mt_opt.backend_explicit && dlsym(RTLD_DEFAULT, "malloc") != (void *)malloc)
		mt_warn("%s defines malloc and comes before libmemtrace.so in "
			"LD_PRELOAD, so memtrace sees none of the program's "
			"malloc calls; put libmemtrace.so first",
			object_of(dlsym(RTLD_DEFAULT, "malloc")));
	bool reexecuted = getenv(REEXEC_MARK) != NULL;
	if (reexecuted)
		unsetenv(REEXEC_MARK);
	if (!mt_opt.backend_explicit || serves_requested())
		return;
	if (strcmp(mt_opt.backend, "glibc") == 0)
		mt_fatal("MEMTRACE_BACKEND=glibc, but malloc is served by %s: "
			 "remove it from LD_PRELOAD",
			 mt_backend_id.library);
	const char *lib = requested_library(buf, sizeof buf);
	if (reexecuted)
		mt_fatal("backend %s (%s) was preloaded but malloc is served by "
			 "%s; is it a malloc library?",
			 mt_opt.backend, lib, mt_backend_id.library);
	reexec_with(lib);
}
